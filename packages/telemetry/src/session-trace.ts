import { createHash } from 'node:crypto';
import {
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  TraceFlags,
  context,
  trace,
  type Attributes,
  type Context,
  type Link,
  type Span,
  type Tracer,
} from '@opentelemetry/api';

/** Span attribute names of the gateway (never a key, token, audio or transcript). */
export const SPAN_ATTRS = {
  sessionId: 's2s.session.id',
  attachmentId: 's2s.attachment.id',
  responseId: 's2s.response.id',
  relayId: 's2s.relay.id',
  provider: 'gen_ai.provider.name',
  model: 'gen_ai.request.model',
  providerModel: 'gen_ai.response.model',
  sessionStatus: 's2s.session.status',
  endCause: 's2s.session.end_cause',
  finishReason: 's2s.attachment.finish_reason',
  billedCents: 's2s.billed_cents',
  preauthorizedCents: 's2s.preauthorized_cents',
  audioInMs: 's2s.usage.audio_in_ms',
  audioOutMs: 's2s.usage.audio_out_ms',
  inputAudioTokens: 'gen_ai.usage.input_tokens',
  outputAudioTokens: 'gen_ai.usage.output_tokens',
  timeToFirstAudioMs: 's2s.time_to_first_audio_ms',
  checkpointSeq: 's2s.checkpoint.seq',
  checkpointFinal: 's2s.checkpoint.final',
  errorType: 'error.type',
  messagingSystem: 'messaging.system',
  messagingDestination: 'messaging.destination.name',
  messagingOperation: 'messaging.operation.type',
  messagingBatchCount: 'messaging.batch.message_count',
} as const;

/** The cumulative usage counters as span attributes. */
export function usageAttributes(u: {
  audio_in_ms: number;
  audio_out_ms: number;
  input_audio_tokens: number;
  output_audio_tokens: number;
}): Attributes {
  return {
    [SPAN_ATTRS.audioInMs]: u.audio_in_ms,
    [SPAN_ATTRS.audioOutMs]: u.audio_out_ms,
    [SPAN_ATTRS.inputAudioTokens]: u.input_audio_tokens,
    [SPAN_ATTRS.outputAudioTokens]: u.output_audio_tokens,
  };
}

const TRACE_ID = /^[0-9a-f]{32}$/;

/**
 * The span id every session span outside the create request hangs from: derived from the trace id, so
 * the relay, billing and the control plane agree on it without storing it. No process exports a span
 * with this id; a viewer shows its children as the top-level spans of the session's trace, beside the
 * create request.
 */
export function sessionRootSpanId(traceId: string): string {
  return createHash('sha256').update(`s2s.session:${traceId}`).digest('hex').slice(0, 16);
}

/**
 * A context whose parent is the session's trace (`trace_id` recorded at create), for spans of that
 * session started by another process or long after the create request. Sampled: a session's spans are
 * recorded wherever its create was (an unknown decision is taken as "record"). An id that is not a
 * trace id gives the root context, so spans then start their own trace.
 */
export function sessionContext(traceId: string | null | undefined): Context {
  if (!traceId || !TRACE_ID.test(traceId) || traceId === '0'.repeat(32)) return ROOT_CONTEXT;
  return trace.setSpanContext(ROOT_CONTEXT, {
    traceId,
    spanId: sessionRootSpanId(traceId),
    traceFlags: TraceFlags.SAMPLED,
    isRemote: true,
  });
}

/** A link to the span active in `ctx` when it belongs to another trace than `traceId` (where the work came from). */
function linkFrom(ctx: Context, traceId: string | null | undefined): Link[] {
  const sc = trace.getSpanContext(ctx);
  if (!sc || !trace.isSpanContextValid(sc) || sc.traceId === traceId) return [];
  return [{ context: sc }];
}

export interface SessionSpanOptions {
  kind?: SpanKind;
  attributes?: Attributes;
}

/**
 * Starts a span in the session's trace: a child of the active span when that is in the session's trace,
 * else under the session's root and linked to the active span (the request or message that caused it). The caller ends it; `context()` is the one to run children in.
 * `active`: the context that stands for the active one (a caller that passes contexts instead of entering them).
 */
export function startSessionSpan(
  tracer: Tracer,
  name: string,
  traceId: string | null | undefined,
  opts: SessionSpanOptions = {},
  active: Context = context.active(),
): { span: Span; context: Context } {
  // Already inside the session's trace (a message that carried it): a child of that span.
  const inside = trace.getSpanContext(active)?.traceId === traceId;
  const parent = inside ? active : sessionContext(traceId);
  const span = tracer.startSpan(
    name,
    { kind: opts.kind ?? SpanKind.INTERNAL, attributes: opts.attributes ?? {}, links: linkFrom(active, traceId) },
    parent,
  );
  return { span, context: trace.setSpan(parent, span) };
}

/** Runs `fn` in a session span (see startSessionSpan) that ends when it settles, with an error status on a throw. */
export async function inSessionSpan<T>(
  tracer: Tracer,
  name: string,
  traceId: string | null | undefined,
  opts: SessionSpanOptions,
  fn: (span: Span) => Promise<T>,
): Promise<T> {
  const { span, context: ctx } = startSessionSpan(tracer, name, traceId, opts);
  try {
    return await context.with(ctx, () => fn(span));
  } catch (err) {
    failSpan(span, err);
    throw err;
  } finally {
    span.end();
  }
}

/** Marks a span failed with the error's code (an AppError's `code`) or its class name; no message text. */
export function failSpan(span: Span, err: unknown): void {
  const code =
    typeof err === 'object' && err !== null && 'code' in err && typeof err.code === 'string'
      ? err.code
      : err instanceof Error
        ? err.name
        : 'error';
  span.setAttribute(SPAN_ATTRS.errorType, code);
  span.setStatus({ code: SpanStatusCode.ERROR });
}

/** The gateway's tracer for a component (`s2s.relay`, `s2s.billing`, `s2s.sessions`). */
export function gatewayTracer(component: string): Tracer {
  return trace.getTracer(`s2s.${component}`);
}
