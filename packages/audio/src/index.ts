export * from './resampler.js';
export * from './g711.js';
export * from './frames.js';
