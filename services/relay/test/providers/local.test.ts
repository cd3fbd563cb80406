import t from 'tap';
import { LocalAdapter } from '../../src/providers/index.js';
import { adapterSuite } from './adapter-suite.js';
import { openAIProtocolSpec } from './simulator-harness.js';

adapterSuite(
  t,
  openAIProtocolSpec('local', (url, apiKey) => new LocalAdapter({ url, apiKey })),
);
