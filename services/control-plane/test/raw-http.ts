// Sends bytes no HTTP client would send (bad header bytes, oversized headers, TE+CL) and reads the answers.
import { connect } from 'node:net';

export interface RawResponse {
  status: number;
  /** Header names in lower case; a repeated header keeps its last value. */
  headers: Record<string, string>;
  body: string;
  /** The next response on the same connection, when one was asked for. */
  next?: RawResponse;
}

function parseOne(buf: Buffer, head = false): { res: RawResponse; rest: Buffer } | null {
  const end = buf.indexOf('\r\n\r\n');
  if (end === -1) return null;
  const [statusLine, ...lines] = buf.subarray(0, end).toString('latin1').split('\r\n');
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine ?? '')?.[1] ?? 0);
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  const length = headers['content-length'] === undefined ? undefined : Number(headers['content-length']);
  const bodyStart = end + 4;
  // Interim answers and answers to HEAD carry no body, whatever Content-Length says.
  if ((status >= 100 && status < 200) || (head && status >= 200))
    return { res: { status, headers, body: '' }, rest: buf.subarray(bodyStart) };
  if (length === undefined) return { res: { status, headers, body: buf.subarray(bodyStart).toString('utf8') }, rest: Buffer.alloc(0) };
  if (buf.length < bodyStart + length) return null;
  return {
    res: { status, headers, body: buf.subarray(bodyStart, bodyStart + length).toString('utf8') },
    rest: buf.subarray(bodyStart + length),
  };
}

/**
 * Writes `raw` on a fresh connection to `baseUrl` and resolves with the first response (and the following
 * ones when `responses` > 1) once the server closes the connection or enough responses arrived.
 */
export function rawRequest(
  baseUrl: string,
  raw: string | Buffer,
  opts: { responses?: number; timeoutMs?: number; head?: boolean } = {},
): Promise<RawResponse> {
  const { hostname, port } = new URL(baseUrl);
  const wanted = opts.responses ?? 1;
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    let data: Buffer = Buffer.alloc(0);
    let settled = false;
    const finish = () => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      const parsed: RawResponse[] = [];
      let rest: Buffer = data;
      for (let one = parseOne(rest, opts.head); one; one = parseOne(rest, opts.head)) {
        // Interim answers (100 Continue) precede the real one.
        if (one.res.status >= 200) parsed.push(one.res);
        rest = one.rest;
        if (rest.length === 0) break;
      }
      if (parsed.length === 0) {
        reject(new Error(`no HTTP response (got ${JSON.stringify(data.toString('latin1').slice(0, 200))})`));
        return;
      }
      for (let i = parsed.length - 1; i > 0; i--) parsed[i - 1]!.next = parsed[i];
      resolve(parsed[0]!);
    };
    const timer = setTimeout(finish, opts.timeoutMs ?? 5000);
    socket.on('connect', () => socket.write(raw));
    socket.on('data', (chunk: Buffer) => {
      data = Buffer.concat([data, chunk]);
      let count = 0;
      let rest: Buffer = data;
      for (
        let one = parseOne(rest, opts.head);
        one && (one.res.status < 200 || one.res.headers['content-length'] !== undefined);
        one = parseOne(rest, opts.head)
      ) {
        if (one.res.status >= 200) count++;
        rest = one.rest;
      }
      if (count >= wanted) finish();
    });
    socket.on('error', () => finish());
    socket.on('close', finish);
  });
}
