import t from 'tap';
import { checkNewItem, checkResponseOptions, checkSessionUpdate, resolveHints } from '../src/agent/checks.js';
import { DEFAULT_AGENT_LIMITS } from '../src/agent/types.js';
import { AzureOpenAIAdapter, GEMINI_CAPABILITIES, LocalAdapter, OPENAI_CAPABILITIES } from '../src/providers/index.js';
import { NO_CAPABILITIES } from '../src/upstream/opener.js';

const L = DEFAULT_AGENT_LIMITS;
const OBJ = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };

t.test('session.update: limits name the limit, the param names the field', async (t) => {
  t.equal(checkSessionUpdate({ instructions: 'x'.repeat(L.maxInstructionsBytes) }, L, OPENAI_CAPABILITIES), null);
  t.match(checkSessionUpdate({ instructions: 'é'.repeat(L.maxInstructionsBytes / 2 + 1) }, L, OPENAI_CAPABILITIES), {
    code: 'limit_exceeded',
    param: 'session.instructions',
    message: /max_instructions_bytes/,
  });
  const tools = Array.from({ length: L.maxTools + 1 }, (_, i) => ({ name: `t${i}`, parameters: OBJ }));
  t.match(checkSessionUpdate({ tools }, L, OPENAI_CAPABILITIES), { code: 'limit_exceeded', param: 'session.tools', message: /max_tools/ });
  t.equal(checkSessionUpdate({ tools: tools.slice(0, L.maxTools) }, L, OPENAI_CAPABILITIES), null);
  const big = { type: 'object', description: 'x'.repeat(L.maxToolSchemaBytes) };
  t.match(
    checkSessionUpdate(
      {
        tools: [
          { name: 'a', parameters: OBJ },
          { name: 'b', parameters: big },
        ],
      },
      L,
      OPENAI_CAPABILITIES,
    ),
    {
      code: 'limit_exceeded',
      param: 'session.tools[1].parameters',
      message: /max_tool_schema_bytes/,
    },
  );
});

t.test('session.update: invalid JSON Schemas and duplicate names are refused', async (t) => {
  for (const parameters of [
    { type: 'object', properties: 3 },
    { type: 'strange' },
    { type: 'string' },
    { type: 'object', required: 'city' },
  ]) {
    t.match(checkSessionUpdate({ tools: [{ name: 'f', parameters }] }, L, OPENAI_CAPABILITIES), {
      code: 'invalid_value',
      param: 'session.tools[0].parameters',
    });
  }
  t.match(
    checkSessionUpdate(
      {
        tools: [
          { name: 'f', parameters: OBJ },
          { name: 'f', parameters: OBJ },
        ],
      },
      L,
      OPENAI_CAPABILITIES,
    ),
    {
      code: 'invalid_value',
      param: 'session.tools[1].name',
    },
  );
});

t.test('what the provider cannot do is refused up front, naming the field', async (t) => {
  const can = NO_CAPABILITIES;
  t.match(checkSessionUpdate({ inputTranscription: {} }, L, can), { code: 'unsupported_parameter', param: 'session.inputTranscription' });
  t.match(checkSessionUpdate({ turnDetection: null }, L, can), { param: 'session.turnDetection' });
  t.match(checkSessionUpdate({ turnDetection: { type: 'semantic_vad' } }, L, can), { param: 'session.turnDetection' });
  t.match(checkSessionUpdate({ tools: [{ name: 'f', parameters: OBJ }] }, L, can), { param: 'session.tools' });
  t.match(checkSessionUpdate({ outputModalities: ['text'] }, L, can), { param: 'session.outputModalities' });
  t.match(checkSessionUpdate({ noiseReduction: { type: 'far_field' } }, L, can), { param: 'session.noiseReduction' });
  t.equal(checkSessionUpdate({ voice: 'ash', inputTranscription: null, tools: [] }, L, can), null, 'turning off is always fine');
  t.match(checkResponseOptions({ instructions: 'x' }, L, can), { param: 'response' });
  t.match(checkNewItem({ type: 'function_call_output', callId: 'c', output: '' }, L, can), { param: 'item.type' });
  t.match(checkNewItem({ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'x' }] }, L, can), {
    param: 'item.content[0].type',
  });
  t.equal(checkSessionUpdate({ inputTranscription: {}, turnDetection: null }, L, OPENAI_CAPABILITIES), null);
});

t.test('items: text parts and outputs over the limit', async (t) => {
  t.match(
    checkNewItem(
      { type: 'message', role: 'system', content: [{ type: 'input_text', text: 'x'.repeat(L.maxTextPartBytes + 1) }] },
      L,
      OPENAI_CAPABILITIES,
    ),
    { code: 'limit_exceeded', param: 'item.content[0].text', message: /max_text_part_bytes/ },
  );
  t.match(checkNewItem({ type: 'function_call_output', callId: 'c', output: 'x'.repeat(L.maxTextPartBytes + 1) }, L, OPENAI_CAPABILITIES), {
    code: 'limit_exceeded',
    param: 'item.output',
  });
  t.match(checkResponseOptions({ instructions: 'x'.repeat(L.maxInstructionsBytes + 1) }, L, OPENAI_CAPABILITIES), {
    param: 'response.instructions',
  });
});

const AZURE_CAPABILITIES = new AzureOpenAIAdapter({ endpoint: 'https://r.openai.azure.com', apiKey: 'k' }).supports;
const LOCAL_CAPABILITIES = new LocalAdapter({ url: 'ws://127.0.0.1:1/v1/realtime' }).supports;

t.test('the current OpenAI session fields: refused where they change the answer, hints resolved to what takes effect', async (t) => {
  const reasoning = { reasoning: { effort: 'high' as const } };
  const prompt = { prompt: { id: 'pmpt_1' } };
  const hints = {
    parallelToolCalls: true,
    truncation: { type: 'retention_ratio' as const, retentionRatio: 0.5 },
    include: ['item.input_audio_transcription.logprobs' as const],
  };
  for (const [name, can] of [
    ['openai', OPENAI_CAPABILITIES],
    ['azure', AZURE_CAPABILITIES],
  ] as const) {
    t.equal(checkSessionUpdate({ ...reasoning, ...prompt, ...hints }, L, can), null, `${name} honours every field`);
    t.same(
      resolveHints({ ...reasoning, ...hints }, can),
      { upstream: { ...reasoning, ...hints }, effective: { ...reasoning, ...hints } },
      `${name}: all passed on`,
    );
  }
  for (const [name, can] of [
    ['local', LOCAL_CAPABILITIES],
    ['gemini', GEMINI_CAPABILITIES],
    ['a provider this relay does not have', NO_CAPABILITIES],
  ] as const) {
    t.match(
      checkSessionUpdate(reasoning, L, can),
      { code: 'unsupported_parameter', param: 'session.reasoning', message: /Reasoning/ },
      name,
    );
    t.match(checkSessionUpdate(prompt, L, can), { code: 'unsupported_parameter', param: 'session.prompt', message: /stored prompt/ }, name);
    t.equal(checkSessionUpdate({ prompt: null, ...hints }, L, can), null, `${name}: hints and clearing a prompt are accepted`);
    const { upstream, effective } = resolveHints({ instructions: 'x', ...hints }, can);
    t.same(upstream, { instructions: 'x' }, `${name}: hints it does not honour are not sent`);
    t.same(
      effective,
      { instructions: 'x', parallelToolCalls: can.sessionFields.parallelToolCalls, truncation: can.sessionFields.truncation, include: [] },
      `${name}: what takes effect`,
    );
  }
  t.same(
    LOCAL_CAPABILITIES.sessionFields,
    { reasoning: false, prompt: false, parallelToolCalls: false, truncation: 'disabled', include: 'none' },
    'the simulator: one call per response, never truncates',
  );
});
