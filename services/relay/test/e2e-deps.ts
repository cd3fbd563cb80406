// What the top-level end-to-end tests (tests/e2e) take from the workspace. tests/ is not a workspace package
// and has no node_modules of its own, so bare imports do not resolve there; they resolve here, from the relay.
export { CreateKeyResponse, REALTIME_PROTOCOL, ResponseDoneEvent, VoiceSession, Wallet, type Rate } from '@s2s/contract';
export { billedCents, preauthorizationCents } from '@s2s/core';
export { checkLedgerInvariants, createTestDatabase, type TestDatabase } from '@s2s/db/testing';
export { connectBus, type Bus } from '@s2s/bus';
export { default as WebSocket } from 'ws';
export { Client, eventually, frames, silence, tone } from './helpers.js';
