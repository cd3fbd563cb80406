import type { Attributes, AttributeValue, Context } from '@opentelemetry/api';
import type { ReadableSpan, Span, SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { isSensitiveName, redactString } from './redact.js';

/**
 * Scrubs every span before the wrapped processors see it, so no exporter can record a key, token or audio:
 * - drops string / array attributes whose name mentions authorization, cookie, api_key, token, secret or
 *   audio (numbers survive, so `s2s.audio_in_ms` or `gen_ai.usage.input_tokens` counts are kept);
 * - removes bearer tokens, `vr_sk_` keys, `ek_` client secrets, provider keys and secret query parameter values from every
 *   remaining string: span name, attributes, event and link attributes, status message.
 */
export class RedactingSpanProcessor implements SpanProcessor {
  private readonly inner: readonly SpanProcessor[];

  constructor(inner: SpanProcessor | readonly SpanProcessor[] = []) {
    this.inner = Array.isArray(inner) ? inner : [inner as SpanProcessor];
  }

  onStart(span: Span, parentContext: Context): void {
    for (const p of this.inner) p.onStart(span, parentContext);
  }

  // The span is still writable here: the only place its name can be changed.
  onEnding(span: Span): void {
    const name = redactString(span.name);
    if (name !== span.name) span.updateName(name);
    for (const p of this.inner) p.onEnding?.(span);
  }

  onEnd(span: ReadableSpan): void {
    scrubAttributes(span.attributes);
    for (const event of span.events) if (event.attributes) scrubAttributes(event.attributes);
    for (const link of span.links) if (link.attributes) scrubAttributes(link.attributes);
    if (span.status.message) span.status.message = redactString(span.status.message);
    for (const p of this.inner) p.onEnd(span);
  }

  async forceFlush(): Promise<void> {
    await Promise.all(this.inner.map((p) => p.forceFlush()));
  }

  async shutdown(): Promise<void> {
    await Promise.all(this.inner.map((p) => p.shutdown()));
  }
}

/** Redacts an attribute map in place (the SDK hands processors its own mutable object). */
export function scrubAttributes(attributes: Attributes): void {
  for (const key of Object.keys(attributes)) {
    const value = attributes[key];
    if (value === undefined) continue;
    if (isSensitiveName(key) && typeof value !== 'number' && typeof value !== 'boolean') {
      delete attributes[key];
      continue;
    }
    const scrubbed = scrubValue(value);
    if (scrubbed !== value) attributes[key] = scrubbed;
  }
}

function scrubValue(value: AttributeValue): AttributeValue {
  if (typeof value === 'string') return redactString(value);
  if (!Array.isArray(value)) return value;
  let changed = false;
  const out = value.map((v: unknown) => {
    if (typeof v !== 'string') return v;
    const r = redactString(v);
    if (r !== v) changed = true;
    return r;
  });
  return changed ? (out as AttributeValue) : value;
}
