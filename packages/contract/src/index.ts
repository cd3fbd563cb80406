export * from './audio.js';
export * from './errors.js';
export * from './http.js';
export * from './realtime.js';
export * from './bus.js';
export * from './client-secrets.js';
export * from './admin-lists.js';
export * from './console.js';
