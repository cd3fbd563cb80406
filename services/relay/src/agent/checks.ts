import type { RealtimeErrorCode } from '@s2s/contract';
import { Ajv } from 'ajv';
import type { AgentLimits, FunctionTool, NewItem, ResponseOptions, VoiceSettings } from './types.js';
import type { ProviderCapabilities } from '../providers/shared/types.js';

/**
 * Checks of the voice-agent model that hold in every dialect, made before anything is forwarded: the
 * limits of decisions.md (each refusal names its limit), JSON Schema validity of tool parameters, and what
 * the session's provider can do (its ProviderCapabilities). Params are neutral paths (codecs/events.ts).
 */
export interface CheckRefusal {
  code: Extract<RealtimeErrorCode, 'limit_exceeded' | 'invalid_value' | 'unsupported_parameter'>;
  param: string;
  message: string;
}

const ajv = new Ajv({ strict: false, validateSchema: true });

function bytes(s: string): number {
  return Buffer.byteLength(s, 'utf8');
}

function limit(param: string, what: string, max: number, name: string): CheckRefusal {
  return { code: 'limit_exceeded', param, message: `${what} exceeds the limit of ${max} (${name}).` };
}

function unsupported(param: string, what: string): CheckRefusal {
  return { code: 'unsupported_parameter', param, message: `${what} is not supported by this session's model.` };
}

function checkTools(tools: FunctionTool[], prefix: string, limits: AgentLimits): CheckRefusal | null {
  if (tools.length > limits.maxTools) return limit(`${prefix}.tools`, `${tools.length} tools`, limits.maxTools, 'max_tools');
  const names = new Set<string>();
  for (const [i, tool] of tools.entries()) {
    const param = `${prefix}.tools[${i}]`;
    if (names.has(tool.name))
      return { code: 'invalid_value', param: `${param}.name`, message: `Tool name ${tool.name} is declared twice.` };
    names.add(tool.name);
    const size = bytes(JSON.stringify(tool.parameters));
    if (size > limits.maxToolSchemaBytes)
      return limit(`${param}.parameters`, `A schema of ${size} bytes`, limits.maxToolSchemaBytes, 'max_tool_schema_bytes');
    if (tool.parameters.type !== 'object' || !ajv.validateSchema(tool.parameters)) {
      return {
        code: 'invalid_value',
        param: `${param}.parameters`,
        message: 'Tool parameters must be a valid JSON Schema of type object.',
      };
    }
  }
  return null;
}

/** Settings of a session.update or per-response options (prefix `session` or `response`). */
function checkCommon(
  s: VoiceSettings | ResponseOptions,
  prefix: 'session' | 'response',
  limits: AgentLimits,
  can: ProviderCapabilities,
): CheckRefusal | null {
  if (s.instructions !== undefined && bytes(s.instructions) > limits.maxInstructionsBytes) {
    return limit(
      `${prefix}.instructions`,
      `Instructions of ${bytes(s.instructions)} bytes`,
      limits.maxInstructionsBytes,
      'max_instructions_bytes',
    );
  }
  if (s.tools !== undefined) {
    if (!can.tools && s.tools.length > 0) return unsupported(`${prefix}.tools`, 'Function tools');
    const bad = checkTools(s.tools, prefix, limits);
    if (bad) return bad;
  }
  if (s.toolChoice !== undefined && !can.tools && s.toolChoice !== 'auto' && s.toolChoice !== 'none') {
    return unsupported(`${prefix}.toolChoice`, 'A tool choice');
  }
  if (s.outputModalities?.[0] === 'text' && !can.textOutput) return unsupported(`${prefix}.outputModalities`, 'Text output');
  return null;
}

export function checkSessionUpdate(update: VoiceSettings, limits: AgentLimits, can: ProviderCapabilities): CheckRefusal | null {
  const common = checkCommon(update, 'session', limits, can);
  if (common) return common;
  const td = update.turnDetection;
  if (td === null && !can.manualTurns) return unsupported('session.turnDetection', 'Manual turns (turn_detection null)');
  if (td?.type === 'semantic_vad' && !can.semanticVad) return unsupported('session.turnDetection', 'Semantic VAD');
  if (update.inputTranscription && !can.inputTranscription) return unsupported('session.inputTranscription', 'Input transcription');
  if (update.noiseReduction && !can.noiseReduction) return unsupported('session.noiseReduction', 'Noise reduction');
  // Fields that change the answer: refused where not honoured (decisions.md, "Current OpenAI session fields").
  if (update.reasoning && !can.sessionFields.reasoning) return unsupported('session.reasoning', 'Reasoning');
  if (update.prompt && !can.sessionFields.prompt) return unsupported('session.prompt', 'A stored prompt');
  return null;
}

/**
 * An accepted update split for its two destinations: `upstream`, what is passed to the provider (the hints
 * it does not honour left out), and `effective`, what takes effect (those hints replaced by what the
 * provider does whatever is asked), which session.updated reports.
 */
export function resolveHints(update: VoiceSettings, can: ProviderCapabilities): { upstream: VoiceSettings; effective: VoiceSettings } {
  const f = can.sessionFields;
  const upstream: VoiceSettings = { ...update };
  const effective: VoiceSettings = { ...update };
  if (update.parallelToolCalls !== undefined && f.parallelToolCalls !== 'honoured') {
    delete upstream.parallelToolCalls;
    effective.parallelToolCalls = f.parallelToolCalls;
  }
  if (update.truncation !== undefined && f.truncation !== 'honoured') {
    delete upstream.truncation;
    effective.truncation = f.truncation;
  }
  if (update.include !== undefined && f.include !== 'honoured') {
    delete upstream.include;
    effective.include = [];
  }
  return { upstream, effective };
}

export function checkResponseOptions(options: ResponseOptions, limits: AgentLimits, can: ProviderCapabilities): CheckRefusal | null {
  if (!can.responseOptions) return unsupported('response', 'A response object in response.create');
  return checkCommon(options, 'response', limits, can);
}

export function checkNewItem(item: NewItem, limits: AgentLimits, can: ProviderCapabilities): CheckRefusal | null {
  if (item.type === 'function_call_output') {
    if (!can.tools) return unsupported('item.type', 'A function_call_output item');
    if (bytes(item.output) > limits.maxTextPartBytes)
      return limit('item.output', 'The output', limits.maxTextPartBytes, 'max_text_part_bytes');
    return null;
  }
  if (item.role !== 'user' && !can.systemAndAssistantItems) return unsupported('item.role', `A ${item.role} message`);
  for (const [i, part] of item.content.entries()) {
    if (part.type === 'input_audio') {
      if (!can.audioItems) return unsupported(`item.content[${i}].type`, 'An input_audio content part');
      continue;
    }
    if (part.type === 'input_text' && item.role === 'user' && !can.textInput) return unsupported(`item.content[${i}].type`, 'A text turn');
    if (bytes(part.text) > limits.maxTextPartBytes) {
      return limit(`item.content[${i}].text`, `A text part of ${bytes(part.text)} bytes`, limits.maxTextPartBytes, 'max_text_part_bytes');
    }
  }
  return null;
}
