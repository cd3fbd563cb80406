// Test helpers shared by the services' tests and the end-to-end tests (never imported by production code).
export { Client, type ServerEventLike } from './realtime-client.js';
export { eventually, sleep } from './eventually.js';
export { closedPort } from './ports.js';
export { selfSignedCertificate } from './tls.js';
