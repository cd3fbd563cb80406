import cliProgress from 'cli-progress';

/** Where `talk` reports: lines (transcripts, events) and the running figures. */
export interface Progress {
  line(text: string): void;
  /** Audio sent so far (ms), out of `totalMs` when known (a file; not the microphone). */
  sent(ms: number, totalMs?: number): void;
  received(ms: number): void;
  /** The running cost in cents (fractional) and the responses it covers. */
  cost(cents: number, responses: number): void;
  stop(): void;
}

export interface Output {
  write(text: string): unknown;
  isTTY?: boolean | undefined;
}

const seconds = (ms: number) => (ms / 1000).toFixed(1);

/**
 * On a terminal: two live lines (cli-progress) under the transcripts, the audio sent as a bar, the audio
 * received and the running cost beside it. Elsewhere (a pipe, a test): plain lines, the figures once a
 * response is done, so logs stay readable.
 */
export function createProgress(out: Output): Progress {
  if (!out.isTTY) {
    let sentMs = 0;
    let receivedMs = 0;
    return {
      line: (text) => out.write(`${text}\n`),
      sent: (ms) => (sentMs = ms),
      received: (ms) => (receivedMs = ms),
      cost: (cents, responses) =>
        out.write(
          `  sent ${seconds(sentMs)} s, received ${seconds(receivedMs)} s; running cost ${cents.toFixed(3)} cents (${responses} responses)\n`,
        ),
      stop: () => {},
    };
  }
  const bars = new cliProgress.MultiBar(
    {
      stream: out as NodeJS.WritableStream,
      hideCursor: true,
      clearOnComplete: false,
      stopOnComplete: false,
      autopadding: true,
      fps: 10,
      barsize: 30,
    },
    cliProgress.Presets.shades_classic,
  );
  const sentBar = bars.create(1, 0, { sentS: '0.0', totalS: '?' }, { format: ' sent     {bar} {sentS} / {totalS} s' });
  const recvBar = bars.create(
    1,
    0,
    { received: '0.0', cost: '0.000', responses: 0 },
    {
      format: ' received {received} s of answer | {responses} responses | running cost {cost} cents',
    },
  );
  return {
    line: (text) => bars.log(`${text}\n`),
    sent: (ms, totalMs) => {
      sentBar.setTotal(Math.max(1, totalMs ?? ms));
      sentBar.update(ms, { sentS: seconds(ms), totalS: totalMs === undefined ? 'live' : seconds(totalMs) });
    },
    received: (ms) => recvBar.update(0, { received: seconds(ms) }),
    cost: (cents, responses) => recvBar.update(0, { cost: cents.toFixed(3), responses }),
    stop: () => {
      // stop() alone drops lines logged since the last frame: draw one more first.
      bars.update();
      bars.stop();
    },
  };
}
