// The baseline of the benchmark: a bare express 5 handler answering a fixed JSON body.
import express from 'express';

const app = express();
app.disable('x-powered-by');
const body = { object: 'list', data: [{ id: 'local/echo-1', object: 'model' }] };
app.get('/', (_req, res) => {
  res.json(body);
});
const server = app.listen(0, '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(
    `${JSON.stringify({ msg: 'baseline listening', port: typeof address === 'object' && address ? address.port : 0 })}\n`,
  );
});
process.once('SIGTERM', () => server.close(() => process.exit(0)));
