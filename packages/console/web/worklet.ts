// AudioWorklet processors of the playground, loaded with audioContext.audioWorklet.addModule().
// Capture hands the microphone's samples (device rate) to the page; playback plays queued samples and
// reports how many frames it actually played (the page shows it, the browser test reads it).

class CaptureProcessor extends AudioWorkletProcessor {
  process(inputs: Float32Array[][]): boolean {
    const channel = inputs[0]?.[0];
    if (channel && channel.length > 0) this.port.postMessage(channel.slice(0));
    return true;
  }
}

/** Messages to playback: samples to queue, or 'clear' (barge-in: drop what is not played yet). */
class PlaybackProcessor extends AudioWorkletProcessor {
  private queue: Float32Array[] = [];
  private offset = 0;
  private unreported = 0;

  constructor() {
    super();
    this.port.onmessage = (e: MessageEvent<Float32Array | 'clear'>) => {
      if (e.data === 'clear') {
        this.queue = [];
        this.offset = 0;
      } else this.queue.push(e.data);
    };
  }

  process(_inputs: Float32Array[][], outputs: Float32Array[][]): boolean {
    const output = outputs[0];
    const first = output?.[0];
    if (!output || !first) return true;
    let n = 0;
    while (n < first.length && this.queue.length > 0) {
      const head = this.queue[0]!;
      const take = Math.min(first.length - n, head.length - this.offset);
      first.set(head.subarray(this.offset, this.offset + take), n);
      n += take;
      this.offset += take;
      if (this.offset === head.length) {
        this.queue.shift();
        this.offset = 0;
      }
    }
    for (let c = 1; c < output.length; c++) output[c]!.set(first);
    this.unreported += n;
    // About every 50 ms, and when the queue runs dry.
    if (this.unreported > 0 && (this.unreported >= sampleRate / 20 || this.queue.length === 0)) {
      this.port.postMessage({ played_frames: this.unreported });
      this.unreported = 0;
    }
    return true;
  }
}

registerProcessor('s2s-capture', CaptureProcessor);
registerProcessor('s2s-playback', PlaybackProcessor);
