import {
  AUDIO_FORMAT,
  AudioFormats,
  Capabilities,
  LIST_DEFAULT_LIMIT,
  Modalities,
  ModelRoute,
  sessionFieldsOf,
  type AdminListPage,
  type AdminModel,
  type ListModelsQuery,
  type Model,
  type ModelList,
  type Rate,
  type UpsertModelRequest,
} from '@s2s/contract';
import { errors, newId, RATE_FIELDS, SEED_RATE } from '@s2s/core';
import { rateColumns, rateFromRow, rateRowShape, sqlStatement, type DbHandle } from '@s2s/db';
import { prismaOf, rateData, rateOfRow, type DbTx, type Prisma } from '@s2s/db/prisma';
import { z } from 'zod';
import type { CatalogCache } from './catalog-cache.js';
import { decodeCursor, toPage } from './paging.js';

/** `pricing.source` of operator-set rates: selling rates derived from the upstream provider's cost. */
export const PRICING_SOURCE = 'upstream_derived';

export const DEFAULT_MODALITIES: Modalities = Object.freeze({ input: ['audio'], output: ['audio'] }) as Modalities;
export const DEFAULT_AUDIO: AudioFormats = Object.freeze({ input: AUDIO_FORMAT, output: AUDIO_FORMAT });

const FULL_DUPLEX: Capabilities = Object.freeze({
  speech_to_speech: true,
  server_vad: true,
  barge_in: true,
  input_transcription: 'optional',
  output_transcription: 'optional',
});

/** What each provider adapter of the relay supports, used when an operator leaves capabilities out. */
export const PROVIDER_CAPABILITIES: Readonly<Record<string, Capabilities>> = Object.freeze({
  local: FULL_DUPLEX,
  openai: FULL_DUPLEX,
  azure: FULL_DUPLEX,
  gemini: FULL_DUPLEX,
});

/** The default catalog: one approved model on the local simulator and one registered but not approved. */
export const SEED_MODELS: readonly UpsertModelRequest[] = Object.freeze([
  {
    id: 'local/echo-1',
    display_name: 'Local Echo',
    owned_by: 'local',
    provider: 'local',
    provider_model: 'echo-1',
    enabled: true,
    approved: true,
    pricing: SEED_RATE,
  },
  {
    id: 'local/unapproved-1',
    display_name: 'Local Unapproved',
    owned_by: 'local',
    provider: 'local',
    provider_model: 'unapproved-1',
    enabled: true,
    approved: false,
    pricing: SEED_RATE,
  },
]);

const CATALOG_SELECT = `
  SELECT m.id, m.display_name, m.owned_by, m.provider, m.provider_model, m.enabled, m.approved,
         m.capabilities, m.audio, m.modalities, m.fallback_routes, m.created_at,
         r.id AS rate_id, r.source, ${rateColumns('r')}
    FROM catalog_models m
    JOIN rate_snapshots r ON r.id = m.current_rate_id`;

/** api-v1 rule 1: enabled, speech-to-speech capable, priced (a current snapshot) and approved. */
const LISTED_MODELS_SQL = `${CATALOG_SELECT}
   WHERE m.enabled AND m.approved AND m.capabilities->>'speech_to_speech' = 'true'
   ORDER BY m.id`;

const LISTED_MODELS = sqlStatement(import.meta.url, {
  name: 'cp_list_models',
  text: LISTED_MODELS_SQL,
  row: z.object({
    id: z.string(),
    display_name: z.string(),
    owned_by: z.string(),
    provider: z.string(),
    provider_model: z.string(),
    enabled: z.boolean(),
    approved: z.boolean(),
    capabilities: Capabilities,
    audio: AudioFormats,
    modalities: Modalities,
    fallback_routes: ModelRoute.array(),
    created_at: z.date(),
    rate_id: z.string(),
    source: z.string(),
    ...rateRowShape,
  }),
});

/** A catalog model joined with its current rate snapshot, as SQL returns it. */
export type CatalogRow = z.infer<typeof LISTED_MODELS.row>;

/** The public catalog entry: canonical fields plus the legacy aliases; never provider or routing. */
export function toModel(row: CatalogRow): Model {
  return {
    id: row.id,
    object: 'model',
    display_name: row.display_name,
    owned_by: row.owned_by,
    modalities: { input: [...row.modalities.input], output: [...row.modalities.output] },
    capabilities: {
      speech_to_speech: row.capabilities.speech_to_speech,
      server_vad: row.capabilities.server_vad,
      barge_in: row.capabilities.barge_in,
      input_transcription: row.capabilities.input_transcription,
      output_transcription: row.capabilities.output_transcription,
      session_fields: sessionFieldsOf(row.provider),
    },
    audio: { input: { ...AUDIO_FORMAT }, output: { ...AUDIO_FORMAT } },
    pricing: {
      source: row.source,
      currency: 'cent',
      unit: 'milli_cents',
      ...rateFromRow(row),
      rate_snapshot_id: row.rate_id,
    },
    name: row.display_name,
    created: Math.floor(row.created_at.getTime() / 1000),
    pricing_unit: 'milli_cents',
    price_per_minute_milli_cents: row.per_minute,
    price_audio_in_token_milli_cents: row.audio_in_token,
    price_audio_out_token_milli_cents: row.audio_out_token,
    price_relay_fee_milli_cents: row.relay_fee_milli_cents,
  };
}

export function toAdminModel(row: CatalogRow): AdminModel {
  return {
    ...toModel(row),
    provider: row.provider,
    provider_model: row.provider_model,
    fallback_routes: row.fallback_routes.map((r) => ({ provider: r.provider, provider_model: r.provider_model })),
    enabled: row.enabled,
    approved: row.approved,
  };
}

/** GET /v1/models. */
export async function listModels({ ctx }: { ctx: { db: DbHandle } }): Promise<ModelList> {
  const { rows } = await LISTED_MODELS.run(ctx.db.pool);
  return { object: 'list', data: rows.map(toModel) };
}

/** A catalog model with its current rate, as Prisma reads it (the operator's reads and writes). */
const WITH_RATE = { currentRate: true } as const satisfies Prisma.CatalogModelInclude;
type ModelWithRate = Prisma.CatalogModelGetPayload<{ include: typeof WITH_RATE }>;

/** The CatalogRow of a model read through Prisma; its jsonb columns checked against the contract's schemas. */
function catalogRowOf(m: ModelWithRate): CatalogRow {
  const rate = m.currentRate;
  if (!rate) throw new Error(`catalog model ${m.id} has no current rate`);
  return {
    id: m.id,
    display_name: m.displayName,
    owned_by: m.ownedBy,
    provider: m.provider,
    provider_model: m.providerModel,
    enabled: m.enabled,
    approved: m.approved,
    capabilities: Capabilities.parse(m.capabilities),
    audio: AudioFormats.parse(m.audio),
    modalities: Modalities.parse(m.modalities),
    fallback_routes: ModelRoute.array().parse(m.fallbackRoutes),
    created_at: m.createdAt,
    rate_id: rate.id,
    source: rate.source,
    ...rateOfRow(rate),
  };
}

/** GET /admin/v1/models: every registered model with a current rate, listed or not, by id. */
export async function listAdminModels({
  ctx,
  input,
}: {
  ctx: { db: DbHandle };
  input: ListModelsQuery;
}): Promise<AdminListPage<AdminModel>> {
  const limit = input.limit ?? LIST_DEFAULT_LIMIT;
  const after = decodeCursor(input.after, ['string'] as const);
  const rows = await prismaOf(ctx.db).catalogModel.findMany({
    where: {
      currentRateId: { not: null },
      ...(input.provider === undefined ? {} : { provider: input.provider }),
      ...(input.approved === undefined ? {} : { approved: input.approved }),
      ...(input.enabled === undefined ? {} : { enabled: input.enabled }),
      ...(after ? { id: { gt: after[0] } } : {}),
    },
    orderBy: { id: 'asc' },
    take: limit + 1,
    include: WITH_RATE,
  });
  return toPage(
    rows,
    limit,
    (m) => toAdminModel(catalogRowOf(m)),
    (m) => [m.id],
  );
}

function sameRate(a: Rate, b: Rate): boolean {
  return RATE_FIELDS.every((f) => a[f] === b[f]);
}

/** Fills the optional parts of an operator's model with the provider's defaults (decisions.md). */
export function withModelDefaults(input: UpsertModelRequest): Required<UpsertModelRequest> {
  const given = input.capabilities ?? PROVIDER_CAPABILITIES[input.provider];
  if (!given) {
    throw errors.invalidRequest(`capabilities are required for provider "${input.provider}", which has no defaults.`);
  }
  // session_fields follow the provider (toModel): an operator's are not kept.
  const { session_fields: _fromProvider, ...capabilities } = given;
  return {
    ...input,
    capabilities,
    audio: input.audio ?? DEFAULT_AUDIO,
    modalities: input.modalities ?? DEFAULT_MODALITIES,
    fallback_routes: input.fallback_routes ?? [],
  };
}

/** The model's own columns, as an upsert writes them. */
function modelData(m: Required<UpsertModelRequest>) {
  return {
    displayName: m.display_name,
    ownedBy: m.owned_by,
    provider: m.provider,
    providerModel: m.provider_model,
    enabled: m.enabled,
    approved: m.approved,
    capabilities: m.capabilities,
    audio: m.audio,
    modalities: m.modalities,
    fallbackRoutes: m.fallback_routes,
  };
}

/** Inserts the model row when its id is free (ON CONFLICT DO NOTHING); a concurrent writer of the same id waits for the other. */
async function insertModelIfMissing(tx: DbTx, m: Required<UpsertModelRequest>): Promise<boolean> {
  const { count } = await tx.catalogModel.createMany({ data: [{ id: m.id, ...modelData(m) }], skipDuplicates: true });
  return count === 1;
}

/** Makes `pricing` the model's current rate; a new immutable snapshot only when it differs. */
async function applyPricing(tx: DbTx, modelId: string, pricing: Rate): Promise<void> {
  const current = (await tx.catalogModel.findUnique({ where: { id: modelId }, select: { currentRate: true } }))?.currentRate;
  if (current && current.source === PRICING_SOURCE && sameRate(rateOfRow(current), pricing)) return;
  const rateId = newId('rate');
  await tx.rateSnapshot.create({ data: { id: rateId, modelId, source: PRICING_SOURCE, ...rateData(pricing) } });
  await tx.catalogModel.update({ where: { id: modelId }, data: { currentRateId: rateId, updatedAt: new Date() }, select: { id: true } });
}

/** PUT /admin/v1/models: upsert; a pricing change makes a new rate snapshot, unchanged pricing keeps it. */
export async function upsertModel({
  ctx,
  input,
}: {
  ctx: { db: DbHandle; catalog: Pick<CatalogCache, 'changed'> };
  input: UpsertModelRequest;
}): Promise<AdminModel> {
  const m = withModelDefaults(input);
  const row = await prismaOf(ctx.db).$transaction(async (tx) => {
    if (!(await insertModelIfMissing(tx, m))) {
      // The update takes the row lock first, so concurrent updates of one model compare pricing one after the other.
      await tx.catalogModel.update({ where: { id: m.id }, data: { ...modelData(m), updatedAt: new Date() }, select: { id: true } });
    }
    await applyPricing(tx, m.id, m.pricing);
    return tx.catalogModel.findUniqueOrThrow({ where: { id: m.id }, include: WITH_RATE });
  });
  // After the commit, so that every control plane reloading on this finds the change.
  ctx.catalog.changed(m.id);
  return toAdminModel(catalogRowOf(row));
}

/**
 * Inserts the default models that are missing. Existing entries are left as the operator made them, so a
 * restart never re-approves, re-enables or re-prices a model (and never adds a snapshot).
 */
export async function seedCatalog({ ctx }: { ctx: { db: DbHandle } }): Promise<{ inserted: string[] }> {
  const inserted: string[] = [];
  for (const seed of SEED_MODELS) {
    const m = withModelDefaults(seed);
    const created = await prismaOf(ctx.db).$transaction(async (tx) => {
      if (!(await insertModelIfMissing(tx, m))) return false;
      await applyPricing(tx, m.id, m.pricing);
      return true;
    });
    if (created) inserted.push(m.id);
  }
  return { inserted };
}
