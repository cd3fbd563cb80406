import { LOCAL_TOKEN_RATIO, startLocalProvider, type LocalProviderOptions, type ReceivedClientEvent } from '@s2s/local-provider';
import type { Test } from 'tap';
import type { ProviderAdapter, UpstreamSessionConfig } from '../../src/providers/index.js';
import { REPLAYED, type AdapterSuiteSpec, type UpstreamHarness } from './adapter-suite.js';
import { BYTES_PER_MS } from '@s2s/core';

export interface SimulatorHarness extends UpstreamHarness {
  url: string;
  events: ReceivedClientEvent[];
  handshakeLog: { path: string; model: string | null; authorized: boolean }[];
}

/** The local simulator as the fake upstream of the OpenAI protocol, recording what the adapter sent. */
export async function startSimulatorHarness(
  opts: { apiKey: string; paced: boolean; capMs?: number },
  makeAdapter: (url: string, apiKey: string) => ProviderAdapter,
  endpoint: SimulatedEndpoint = {},
): Promise<SimulatorHarness> {
  const events: ReceivedClientEvent[] = [];
  const handshakeLog: SimulatorHarness['handshakeLog'] = [];
  const sim = await startLocalProvider({
    port: 0,
    apiKey: opts.apiKey,
    ...endpoint,
    // Paced: one delta, then nothing for a minute, so a barge-in always lands mid-reply.
    replyChunkIntervalMs: opts.paced ? 60_000 : 0,
    // OpenAI's cap: session_expired, then close 1001, with no warning.
    maxConnectionMs: opts.capMs ?? null,
    onClientEvent: (e) => events.push(e),
    onHandshake: (h) => handshakeLog.push(h),
  });
  return {
    url: sim.url,
    address: `127.0.0.1:${sim.port}`,
    adapter: makeAdapter(sim.url, opts.apiKey),
    events,
    handshakeLog,
    handshakes: () => handshakeLog.length,
    drop: () => sim.terminateConnections(),
    expire: (ms) => sim.expireConnections(ms),
    refuse: (refusing) => sim.refuseConnections(refusing),
    close: () => sim.close(),
  };
}

/** Where the simulator answers and how it takes the key (Azure OpenAI: its own path, an `api-key` header). */
export type SimulatedEndpoint = Pick<LocalProviderOptions, 'path' | 'apiKeyHeader'>;

/** The spec of the OpenAI Realtime (GA) protocol against the simulator, shared by `local`, `openai` and `azure`. */
export function openAIProtocolSpec(
  name: string,
  makeAdapter: (url: string, apiKey: string) => ProviderAdapter,
  endpoint: SimulatedEndpoint = {},
): AdapterSuiteSpec<SimulatorHarness> {
  return {
    name,
    agentScript: true,
    start: (opts) => startSimulatorHarness(opts, makeAdapter, endpoint),
    adapterFor: (h, url, apiKey) => makeAdapter(url ?? h!.url, apiKey),
    checkSession(t: Test, h: SimulatorHarness, config: UpstreamSessionConfig) {
      t.same(
        h.handshakeLog[0],
        { path: endpoint.path ?? '/v1/realtime', model: config.providerModel, authorized: true },
        `model in the query, the key accepted (${endpoint.apiKeyHeader ?? 'authorization'} header)`,
      );
      const first = h.events[0]?.event;
      t.same(
        first,
        {
          type: 'session.update',
          session: {
            type: 'realtime',
            output_modalities: ['audio'],
            audio: {
              input: { format: { type: 'audio/pcm', rate: 24000 }, turn_detection: { type: 'server_vad' } },
              output: { format: { type: 'audio/pcm', rate: 24000 }, voice: 'alloy' },
            },
          },
        },
        'GA session.update; an unknown voice maps to alloy',
      );
    },
    checkInputAudio(t: Test, h: SimulatorHarness, sent: Buffer) {
      const appends = h.events.flatMap((e) => (e.event.type === 'input_audio_buffer.append' ? [Buffer.from(e.event.audio, 'base64')] : []));
      t.equal(appends.length, sent.length / 960, 'one append per 20 ms frame');
      t.ok(Buffer.concat(appends).equals(sent), 'the audio, byte for byte');
      const rest = h.events.map((e) => e.event.type).filter((x) => x !== 'input_audio_buffer.append' && x !== 'session.update');
      t.same(rest, ['input_audio_buffer.commit', 'response.create']);
    },
    expectedReply: (sent) => ({
      pcm: sent,
      usage: {
        input_audio_tokens: Math.ceil(sent.length / BYTES_PER_MS / LOCAL_TOKEN_RATIO.inputMsPerToken),
        output_audio_tokens: Math.ceil(sent.length / BYTES_PER_MS / LOCAL_TOKEN_RATIO.outputMsPerToken),
      },
    }),
    checkResumed(t: Test, h: SimulatorHarness) {
      const second = [...new Set(h.events.map((e) => e.connection))][1];
      const onSecond = h.events.filter((e) => e.connection === second).map((e) => e.event);
      t.equal(onSecond[0]?.type, 'session.update', 'the settings first');
      const replayed = onSecond.flatMap((e) =>
        e.type === 'conversation.item.create' && e.item.type === 'message' ? e.item.content.map((p) => ('text' in p ? p.text : '')) : [],
      );
      // The relay's conversation, as text, starting with its context item.
      t.equal(replayed[0], REPLAYED, 'the conversation replayed on the new connection');
    },
    checkBargeIn(t: Test, h: SimulatorHarness, playedMs: number) {
      const cancel = h.events.find((e) => e.event.type === 'response.cancel');
      t.match(cancel?.event, { type: 'response.cancel', response_id: 'resp_1' });
      const truncate = h.events.find((e) => e.event.type === 'conversation.item.truncate');
      // item_2: item_1 is the committed input, item_2 the assistant's audio of resp_1.
      t.match(truncate?.event, { type: 'conversation.item.truncate', item_id: 'item_2', content_index: 0, audio_end_ms: playedMs });
    },
  };
}
