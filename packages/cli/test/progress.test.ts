import t from 'tap';
import { createProgress, type Output } from '../src/progress.js';

/** A terminal stand-in: what cli-progress calls on a TTY stream, the text recorded. */
class FakeTty implements Output {
  isTTY = true;
  columns = 120;
  text = '';
  write(s: string) {
    this.text += s;
    return true;
  }
  cursorTo() {
    return true;
  }
  moveCursor() {
    return true;
  }
  clearLine() {
    return true;
  }
  clearScreenDown() {
    return true;
  }
  on() {
    return this;
  }
  removeListener() {
    return this;
  }
}

t.test('on a terminal: live bars with the audio sent and received, the cost, and lines above them', async (t) => {
  const out = new FakeTty();
  const p = createProgress(out);
  p.line('  you said: speech 1000 ms');
  p.sent(1700, 1700);
  p.received(1000);
  p.cost(1.125, 1);
  p.stop();
  t.match(out.text, '  you said: speech 1000 ms');
  t.match(out.text, / sent +\S+ 1\.7 \/ 1\.7 s/);
  t.match(out.text, 'received 1.0 s of answer | 1 responses | running cost 1.125 cents');
});

t.test('elsewhere: plain lines, the figures once per response', async (t) => {
  let text = '';
  const p = createProgress({ write: (s: string) => (text += s), isTTY: false });
  p.line('session vs_1 (ready)');
  p.sent(1600, 1700);
  p.received(1000);
  p.cost(1.125, 1);
  p.stop();
  t.equal(text, 'session vs_1 (ready)\n  sent 1.6 s, received 1.0 s; running cost 1.125 cents (1 responses)\n');
});
