export * from './types';
export { createEmbeddedPlatform, EMBEDDED_ENTITIES } from './embedded/index';
export { queryFieldsOf, queryFieldTypesOf } from './embedded/query';
export * from './literals';
