import {
  Capabilities,
  CheckpointRoute,
  LIST_DEFAULT_LIMIT,
  SessionStatus,
  SessionTransport,
  type AdminListPage,
  type AdminSession,
  type ListSessionsQuery,
} from '@s2s/contract';
import { addUsage, toVoiceSession, usageByProvider, ZERO_USAGE, type SessionView, type Usage } from '@s2s/core';
import { exactNumber, prismaOf, usageOfRow, USAGE_SELECT, type Prisma } from '@s2s/db/prisma';
import type { AppContext } from '../context.js';
import { decodeTimeCursor, toPage } from './paging.js';

/** What a listed session is read with: its row, its wallet, and every attachment in the order they started. */
const SESSION = {
  id: true,
  keyId: true,
  walletId: true,
  status: true,
  modelId: true,
  rateSnapshotId: true,
  createdAt: true,
  lastActivityAt: true,
  idleTimeoutSeconds: true,
  maxEndsAt: true,
  preauthorizedCents: true,
  reservedCents: true,
  billedCents: true,
  traceId: true,
  settledAt: true,
  ...USAGE_SELECT,
  wallet: { select: { balanceCents: true, reservedCents: true } },
  attachments: {
    select: { ...USAGE_SELECT, routes: true, lastAudioAt: true, transport: true, dialect: true },
    orderBy: [{ startedAt: 'asc' }, { id: 'asc' }],
  },
} as const satisfies Prisma.VoiceSessionSelect;
type SessionRow = Prisma.VoiceSessionGetPayload<{ select: typeof SESSION }>;

/** An attachment's route split (jsonb; null: unknown), checked as it is read. */
const routesOf = (routes: Prisma.JsonValue) => (routes === null ? null : CheckpointRoute.array().parse(routes));

/**
 * GET /admin/v1/sessions: newest first, filtered by key, wallet, model and status; each entry is the voice
 * session resource (usage by modality and bill included) plus its owner and what carries it. Statuses are as
 * stored: an idle session past its expiry shows `expired` once the sweeper or a read by its owner has expired it.
 */
export async function listSessions({
  ctx,
  input,
}: {
  ctx: Pick<AppContext, 'db' | 'config'>;
  input: ListSessionsQuery;
}): Promise<AdminListPage<AdminSession>> {
  const limit = input.limit ?? LIST_DEFAULT_LIMIT;
  const after = decodeTimeCursor(input.after);
  const before = after ? new Date(after[0]) : undefined;
  const prisma = prismaOf(ctx.db);
  const rows = await prisma.voiceSession.findMany({
    where: {
      ...(input.key_id === undefined ? {} : { keyId: input.key_id }),
      // Through the wallet's keys as well (the key_id index): a key never changes wallet.
      ...(input.wallet_id === undefined ? {} : { walletId: input.wallet_id, key: { walletId: input.wallet_id } }),
      ...(input.model === undefined ? {} : { modelId: input.model }),
      ...(input.status === undefined ? {} : { status: input.status }),
      // Keyset: (created_at, id) before the cursor's.
      ...(after && before ? { OR: [{ createdAt: { lt: before } }, { createdAt: before, id: { lt: after[1] } }] } : {}),
    },
    orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
    take: limit + 1,
    select: SESSION,
  });
  // The model's provider and capabilities, the rate's source: a session names both without a foreign key.
  const [models, rates] = await Promise.all([
    prisma.catalogModel.findMany({
      where: { id: { in: [...new Set(rows.map((r) => r.modelId))] } },
      select: { id: true, provider: true, capabilities: true },
    }),
    prisma.rateSnapshot.findMany({
      where: { id: { in: [...new Set(rows.map((r) => r.rateSnapshotId))] } },
      select: { id: true, source: true },
    }),
  ]);
  const modelOf = new Map(models.map((m) => [m.id, { provider: m.provider, capabilities: Capabilities.parse(m.capabilities) }]));
  const sourceOf = new Map(rates.map((r) => [r.id, r.source]));
  return toPage(
    rows,
    limit,
    (r) => {
      const newest = r.attachments.at(-1);
      return {
        ...toVoiceSession(sessionView(r, modelOf.get(r.modelId), sourceOf.get(r.rateSnapshotId)), ctx.config.REALTIME_PUBLIC_URL),
        key_id: r.keyId,
        wallet_id: r.walletId,
        transport: newest ? SessionTransport.parse(newest.transport) : null,
        dialect: newest?.dialect ?? null,
      } satisfies AdminSession;
    },
    (r) => [r.createdAt.toISOString(), r.id],
  );
}

/**
 * The public view of a listed session, as a single read makes it (`@s2s/sessions`' session-row.ts): before
 * settlement the usage is the sum of the attachments' newest checkpoints and the activity includes their audio;
 * after, the settled figures.
 */
function sessionView(
  r: SessionRow,
  model: { provider: string; capabilities: Capabilities } | undefined,
  source: string | undefined,
): SessionView {
  if (!model || source === undefined) throw new Error(`session ${r.id} names a model or rate snapshot that is not there`);
  const unsettled = r.settledAt === null;
  const usage = unsettled ? sumUsage(r.attachments) : usageOfRow(r);
  const audioAt = unsettled ? Math.max(...r.attachments.map((a) => a.lastAudioAt?.getTime() ?? -Infinity)) : -Infinity;
  const balance = exactNumber(r.wallet.balanceCents) - exactNumber(r.wallet.reservedCents);
  return {
    id: r.id,
    status: SessionStatus.parse(r.status),
    modelId: r.modelId,
    provider: model.provider,
    capabilities: model.capabilities,
    rateSnapshotId: r.rateSnapshotId,
    pricingSource: source,
    createdAt: r.createdAt,
    lastActivityAt: audioAt > r.lastActivityAt.getTime() ? new Date(audioAt) : r.lastActivityAt,
    idleTimeoutSeconds: r.idleTimeoutSeconds,
    maxEndsAt: r.maxEndsAt,
    preauthorizedCents: exactNumber(r.preauthorizedCents),
    reservedCents: exactNumber(r.reservedCents),
    walletAvailableCents: balance,
    usage,
    usageRoutes: usageByProvider(r.attachments.map((a) => routesOf(a.routes))),
    billedCents: exactNumber(r.billedCents),
    traceId: r.traceId,
  };
}

function sumUsage(attachments: SessionRow['attachments']): Usage {
  return attachments.map(usageOfRow).reduce(addUsage, ZERO_USAGE);
}
