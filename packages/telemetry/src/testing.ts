// An in-process OTLP/HTTP receiver for tests: start it, give processes
// OTEL_EXPORTER_OTLP_ENDPOINT=<url> and OTEL_EXPORTER_OTLP_PROTOCOL=http/json, then read what they sent.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export type OtlpValue = string | number | boolean | OtlpValue[] | undefined;

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string | undefined;
  name: string;
  /** 1 internal, 2 server, 3 client, 4 producer, 5 consumer (OTLP SpanKind). */
  kind: number;
  serviceName: string | undefined;
  attributes: Record<string, OtlpValue>;
  events: { name: string; attributes: Record<string, OtlpValue> }[];
  links: { traceId: string; spanId: string; attributes: Record<string, OtlpValue> }[];
  /** The request body the span came in, for "no secret anywhere" assertions. */
  raw: string;
}

export interface OtlpReceiver {
  /** Base URL for OTEL_EXPORTER_OTLP_ENDPOINT. */
  url: string;
  spans(): ReceivedSpan[];
  /** Every request body received on /v1/metrics, as JSON text. */
  metricBodies(): string[];
  /** Every request body received, on any path. */
  rawBodies(): string[];
  close(): Promise<void>;
}

interface JsonKeyValue {
  key: string;
  value?: JsonAnyValue;
}
interface JsonAnyValue {
  stringValue?: string;
  boolValue?: boolean;
  intValue?: string | number;
  doubleValue?: number;
  arrayValue?: { values?: JsonAnyValue[] };
}

function anyValue(v: JsonAnyValue | undefined): OtlpValue {
  if (!v) return undefined;
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.doubleValue !== undefined) return v.doubleValue;
  if (v.arrayValue) return (v.arrayValue.values ?? []).map(anyValue);
  return undefined;
}

function attributes(list: JsonKeyValue[] | undefined): Record<string, OtlpValue> {
  return Object.fromEntries((list ?? []).map((kv) => [kv.key, anyValue(kv.value)]));
}

interface JsonSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind?: number;
  attributes?: JsonKeyValue[];
  events?: { name: string; attributes?: JsonKeyValue[] }[];
  links?: { traceId: string; spanId: string; attributes?: JsonKeyValue[] }[];
}
interface JsonTraces {
  resourceSpans?: { resource?: { attributes?: JsonKeyValue[] }; scopeSpans?: { spans?: JsonSpan[] }[] }[];
}

/** Decodes an OTLP/JSON ExportTraceServiceRequest (ids are hex strings in the JSON encoding). */
export function decodeTraces(body: string): ReceivedSpan[] {
  const out: ReceivedSpan[] = [];
  for (const rs of (JSON.parse(body) as JsonTraces).resourceSpans ?? []) {
    const serviceName = attributes(rs.resource?.attributes)['service.name'];
    for (const ss of rs.scopeSpans ?? []) {
      for (const s of ss.spans ?? []) {
        out.push({
          traceId: s.traceId,
          spanId: s.spanId,
          parentSpanId: s.parentSpanId || undefined,
          name: s.name,
          kind: s.kind ?? 0,
          serviceName: typeof serviceName === 'string' ? serviceName : undefined,
          attributes: attributes(s.attributes),
          events: (s.events ?? []).map((e) => ({ name: e.name, attributes: attributes(e.attributes) })),
          links: (s.links ?? []).map((l) => ({ traceId: l.traceId, spanId: l.spanId, attributes: attributes(l.attributes) })),
          raw: body,
        });
      }
    }
  }
  return out;
}

/** Listens on 127.0.0.1, port 0. Only http/json is understood; other encodings answer 415. */
export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const metrics: string[] = [];
  const raw: string[] = [];
  const server: Server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (body += c));
    req.on('end', () => {
      raw.push(body);
      if (!String(req.headers['content-type'] ?? '').includes('json')) {
        res.writeHead(415).end();
        return;
      }
      try {
        if (req.url === '/v1/traces') spans.push(...decodeTraces(body));
        else if (req.url === '/v1/metrics') metrics.push(body);
      } catch {
        res.writeHead(400).end();
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans: () => [...spans],
    metricBodies: () => [...metrics],
    rawBodies: () => [...raw],
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
