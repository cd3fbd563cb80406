import { z } from '@s2s/core';

/** A secret from the environment; empty or blank reads as unset. */
export const optionalSecret = () =>
  z
    .string()
    .optional()
    .transform((v) => (v === undefined || v.trim() === '' ? undefined : v));

/** A ws:// or wss:// URL. */
export const wsUrl = () => z.url({ protocol: /^wss?$/, error: 'must be a ws:// or wss:// URL' });
