import { MediaModality, type UsageMetadata } from '@google/genai';
import t from 'tap';
import { geminiRefusal, geminiSetup, geminiUpdateRefusal } from '../../src/providers/gemini/setup.js';
import { geminiTokenReport } from '../../src/providers/gemini/usage.js';

const { AUDIO, TEXT, IMAGE } = MediaModality;

t.test('usage: prompt and response by modality, cached, thoughts and tool use; nothing dropped', async (t) => {
  const report = (m: UsageMetadata) => geminiTokenReport(m);
  t.same(
    report({
      promptTokenCount: 500,
      promptTokensDetails: [
        { modality: TEXT, tokenCount: 120 },
        { modality: AUDIO, tokenCount: 380 },
      ],
      cachedContentTokenCount: 200,
      cacheTokensDetails: [
        { modality: TEXT, tokenCount: 100 },
        { modality: AUDIO, tokenCount: 100 },
      ],
      responseTokenCount: 90,
      responseTokensDetails: [
        { modality: AUDIO, tokenCount: 80 },
        { modality: TEXT, tokenCount: 10 },
      ],
      thoughtsTokenCount: 15,
      toolUsePromptTokenCount: 30,
      toolUsePromptTokensDetails: [{ modality: TEXT, tokenCount: 30 }],
      totalTokenCount: 635,
    }),
    { inputAudioTokens: 280, inputTextTokens: 50, cachedInputTokens: 200, outputAudioTokens: 80, outputTextTokens: 25, transcribedMs: 0 },
    'input excludes cached (split by cacheTokensDetails); tool results are input; thoughts are output text',
  );
  t.same(
    report({
      promptTokenCount: 300,
      promptTokensDetails: [
        { modality: TEXT, tokenCount: 50 },
        { modality: AUDIO, tokenCount: 250 },
      ],
      cachedContentTokenCount: 120,
      responseTokenCount: 40,
      responseTokensDetails: [{ modality: AUDIO, tokenCount: 40 }],
    }),
    { inputAudioTokens: 180, inputTextTokens: 0, cachedInputTokens: 120, outputAudioTokens: 40, outputTextTokens: 0, transcribedMs: 0 },
    'cached without details: the text prefix first, then audio',
  );
  t.same(
    report({ promptTokenCount: 64, responseTokenCount: 12 }),
    { inputAudioTokens: 0, inputTextTokens: 64, cachedInputTokens: 0, outputAudioTokens: 0, outputTextTokens: 12, transcribedMs: 0 },
    'totals without details are text',
  );
  t.same(
    report({
      promptTokenCount: 100,
      promptTokensDetails: [{ modality: AUDIO, tokenCount: 60 }],
      responseTokensDetails: [
        { modality: AUDIO, tokenCount: 30 },
        { modality: IMAGE, tokenCount: 2 },
      ],
    }),
    { inputAudioTokens: 60, inputTextTokens: 40, cachedInputTokens: 0, outputAudioTokens: 30, outputTextTokens: 2, transcribedMs: 0 },
    'a total above its details puts the rest in text; other modalities are text; details without a total count',
  );
  t.equal(report({}), null, 'no count at all');
  t.equal(geminiTokenReport(null), null);
  t.same(
    geminiTokenReport({ promptTokenCount: -3, responseTokenCount: 1.5, promptTokensDetails: 'x', thoughtsTokenCount: 4 }),
    { inputAudioTokens: 0, inputTextTokens: 0, cachedInputTokens: 0, outputAudioTokens: 0, outputTextTokens: 4, transcribedMs: 0 },
    'malformed counts are ignored',
  );
});

t.test('setup: every setting maps into the setup, nothing is dropped', async (t) => {
  const parameters = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };
  t.same(
    geminiSetup({
      providerModel: 'gemini-live',
      voice: 'charon',
      instructions: 'You are a travel agent.',
      tools: [
        { name: 'weather', description: 'Weather by city', parameters },
        { name: 'time', parameters: { type: 'object' } },
      ],
      toolChoice: 'auto',
      maxOutputTokens: 400,
      turnDetection: { type: 'server_vad', silenceDurationMs: 800, prefixPaddingMs: 300, interruptResponse: false },
      inputTranscription: { language: 'de' },
      noiseReduction: null,
    }),
    {
      setup: {
        model: 'models/gemini-live',
        generationConfig: {
          responseModalities: ['AUDIO'],
          maxOutputTokens: 400,
          speechConfig: { voiceConfig: { prebuiltVoiceConfig: { voiceName: 'Charon' } } },
        },
        systemInstruction: { parts: [{ text: 'You are a travel agent.' }] },
        tools: [
          {
            functionDeclarations: [
              { name: 'weather', description: 'Weather by city', parametersJsonSchema: parameters },
              { name: 'time', parametersJsonSchema: { type: 'object' } },
            ],
          },
        ],
        realtimeInputConfig: {
          automaticActivityDetection: { disabled: false, silenceDurationMs: 800, prefixPaddingMs: 300 },
          activityHandling: 'NO_INTERRUPTION',
        },
        inputAudioTranscription: { languageCodes: ['de'] },
        outputAudioTranscription: {},
        sessionResumption: {},
        contextWindowCompression: { slidingWindow: {} },
      },
    },
  );
  t.same(
    geminiSetup({
      providerModel: 'models/x',
      outputModalities: ['text'],
      turnDetection: null,
      inputTranscription: {},
      maxOutputTokens: 'inf',
    }),
    {
      setup: {
        model: 'models/x',
        generationConfig: { responseModalities: ['TEXT'] },
        realtimeInputConfig: { automaticActivityDetection: { disabled: true } },
        inputAudioTranscription: {},
        sessionResumption: {},
        contextWindowCompression: { slidingWindow: {} },
      },
    },
    'text output: no voice, no output transcription; manual turns disable activity detection',
  );
});

t.test('setup: a resumed session carries its handle', async (t) => {
  t.same(geminiSetup({ providerModel: 'm' }, 'handle_7').setup.sessionResumption, { handle: 'handle_7' });
});

t.test('refusals: what the setup cannot express, and what cannot change mid-session', async (t) => {
  t.equal(geminiRefusal({ voice: 'x', turnDetection: { type: 'server_vad', silenceDurationMs: 500 }, toolChoice: 'auto' }), null);
  const param = (r: ReturnType<typeof geminiRefusal>) => r?.param;
  t.equal(param(geminiRefusal({ turnDetection: { type: 'semantic_vad', eagerness: 'low' } })), 'turnDetection');
  t.equal(param(geminiRefusal({ turnDetection: { type: 'server_vad', threshold: 0.6 } })), 'turnDetection');
  t.equal(param(geminiRefusal({ turnDetection: { type: 'server_vad', createResponse: false } })), 'turnDetection');
  t.equal(param(geminiRefusal({ toolChoice: 'required' })), 'toolChoice');
  t.equal(param(geminiRefusal({ noiseReduction: { type: 'near_field' } })), 'noiseReduction');
  t.equal(param(geminiRefusal({ inputTranscription: { model: 'whisper-1' } })), 'inputTranscription');
  t.equal(param(geminiRefusal({ inputTranscription: { prompt: 'names' } })), 'inputTranscription');

  const current = { voice: 'kore', turnDetection: { type: 'server_vad', silenceDurationMs: 500 } } as const;
  t.equal(
    geminiUpdateRefusal(current, { voice: 'Kore', instructions: 'new', tools: [] }),
    null,
    'same voice; instructions and tools can change',
  );
  t.equal(geminiUpdateRefusal(current, { turnDetection: { type: 'server_vad', silenceDurationMs: 500 } }), null);
  t.equal(geminiUpdateRefusal({}, { turnDetection: { type: 'server_vad' }, maxOutputTokens: 'inf', outputModalities: ['audio'] }), null);
  t.equal(param(geminiUpdateRefusal(current, { voice: 'Puck' })), 'voice');
  t.equal(param(geminiUpdateRefusal(current, { turnDetection: null })), 'turnDetection');
  t.equal(param(geminiUpdateRefusal(current, { outputModalities: ['text'] })), 'outputModalities');
  t.equal(param(geminiUpdateRefusal(current, { inputTranscription: {} })), 'inputTranscription');
  t.equal(param(geminiUpdateRefusal(current, { toolChoice: 'none' })), 'toolChoice');
});
