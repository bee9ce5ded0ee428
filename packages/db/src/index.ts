export * from './connection';
export * from './schema/index';
export * from './owner';
export * from './status';
