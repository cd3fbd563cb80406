// Starts the SDK globally: keep this file to itself (tap runs each file in its own process).
import * as grpc from '@grpc/grpc-js';
import t from 'tap';
import { trace } from '@opentelemetry/api';
import { startTelemetry } from '../src/index.js';

// A bare OTLP/gRPC trace collector: the request stays protobuf bytes, the empty reply is a valid
// ExportTraceServiceResponse.
const raw = (b: Buffer) => b;
const EXPORT = {
  path: '/opentelemetry.proto.collector.trace.v1.TraceService/Export',
  requestStream: false,
  responseStream: false,
  requestSerialize: raw,
  requestDeserialize: raw,
  responseSerialize: raw,
  responseDeserialize: raw,
} as const;

t.test('OTEL_EXPORTER_OTLP_PROTOCOL=grpc exports spans to a gRPC collector, with the headers as metadata', async (t) => {
  const received: { body: Buffer; tenant: grpc.MetadataValue[] }[] = [];
  const server = new grpc.Server();
  server.addService({ Export: EXPORT } as unknown as grpc.ServiceDefinition, {
    Export: (call: grpc.ServerUnaryCall<Buffer, Buffer>, callback: grpc.sendUnaryData<Buffer>) => {
      received.push({ body: call.request, tenant: call.metadata.get('x-tenant') });
      callback(null, Buffer.alloc(0));
    },
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
  t.teardown(() => new Promise<void>((resolve) => server.tryShutdown(() => resolve())));

  const telemetry = startTelemetry({
    serviceName: 'grpc-test',
    env: {
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
      OTEL_EXPORTER_OTLP_HEADERS: 'x-tenant=s2s',
      OTEL_METRICS_EXPORTER: 'none',
    },
    instrumentations: [],
  });
  trace.getTracer('test').startActiveSpan('session.create.grpc', (span) => {
    span.setAttribute('note', 'Bearer vr_sk_mustnotleave');
    span.end();
  });
  await telemetry.shutdown();

  t.equal(received.length, 1);
  const body = received[0]?.body.toString('latin1') ?? '';
  t.match(body, 'session.create.grpc');
  t.match(body, 'grpc-test', 'service.name');
  t.notMatch(body, 'mustnotleave');
  t.same(received[0]?.tenant, ['s2s']);
});
