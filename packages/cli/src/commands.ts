import { billOf, S2SClient, type Model } from '@s2s/client';
import type { Command } from './args.js';
import type { Output } from './progress.js';

type ApiCommand = Exclude<Command, { kind: 'help' } | { kind: 'talk' } | { kind: 'call' }>;

/** `s2s models` and `s2s sessions …`: one call each, the answer as a table or (with --json) as JSON. */
export async function runApiCommand(cmd: ApiCommand, out: Output): Promise<void> {
  const client = new S2SClient({ baseUrl: cmd.baseUrl, apiKey: cmd.key });
  if (cmd.kind === 'models') {
    const list = await client.models.list();
    if (cmd.json) return void out.write(`${JSON.stringify(list, null, 2)}\n`);
    out.write(modelTable(list.data));
    return;
  }
  const session =
    cmd.kind === 'sessions.create'
      ? await client.sessions.create({ model: cmd.model, idempotencyKey: cmd.idempotencyKey })
      : cmd.kind === 'sessions.get'
        ? await client.sessions.get(cmd.id)
        : await client.sessions.end(cmd.id, cmd.reason ? { reason: cmd.reason } : {});
  if (cmd.json) return void out.write(`${JSON.stringify(session, null, 2)}\n`);
  const bill = billOf(session);
  out.write(
    [
      `session ${session.id}: ${session.status} (${session.model})`,
      `  realtime: ${session.realtime.url}`,
      `  expires at ${new Date(session.expires_at * 1000).toISOString()}`,
      `  usage: ${Object.entries(bill.usage)
        .map(([k, v]) => `${k} ${v}`)
        .join(', ')}`,
      `  billed ${bill.billedCents} cents${bill.settled ? ' (settled)' : ''}; preauthorized ${bill.preauthorizedCents}, ` +
        `reserved ${session.billing.reserved_cents}, wallet available ${bill.walletAvailableCents}`,
      '',
    ].join('\n'),
  );
}

/** The catalog as a table: ids, names and every rate (milli-cents). */
function modelTable(models: Model[]): string {
  const head = ['id', 'name', 'per_minute', 'audio_in_token', 'audio_out_token', 'text_in_token', 'text_out_token', 'relay_fee'];
  const rows = models.map((m) => [
    m.id,
    m.display_name,
    ...[
      m.pricing.per_minute,
      m.pricing.audio_in_token,
      m.pricing.audio_out_token,
      m.pricing.text_in_token,
      m.pricing.text_out_token,
      m.pricing.relay_fee_milli_cents,
    ].map(String),
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd();
  return `${[line(head), ...rows.map(line)].join('\n')}\n(rates in milli-cents; ${models.length} models)\n`;
}
