export * from './money.js';
export * from './status.js';
export * from './ids.js';
export * from './errors.js';
export * from './config.js';
export * from './session-resource.js';
export * from './store.js';
