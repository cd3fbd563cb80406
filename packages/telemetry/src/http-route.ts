import { context } from '@opentelemetry/api';
import { RPCType, getRPCMetadata } from '@opentelemetry/core';

/**
 * Names the route of the incoming HTTP request being handled, for the HTTP instrumentation: when the response
 * ends, it names the server span `<METHOD> <route>` and puts `http.route` on the span and on
 * `http.server.request.duration`. Call it synchronously in the request's handler (its context is the
 * request's); the function it returns may be called later, the last route given wins. Undefined when the
 * request is not traced (telemetry off, an untraced path such as /metrics).
 */
export function routeNamer(): ((route: string) => void) | undefined {
  const metadata = getRPCMetadata(context.active());
  if (metadata?.type !== RPCType.HTTP) return undefined;
  return (route) => {
    metadata.route = route;
  };
}
