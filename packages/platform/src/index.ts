export * from './types';
export { createEmbeddedPlatform, EMBEDDED_ENTITIES } from './embedded/index';
export { queryFieldsOf } from './embedded/query';
