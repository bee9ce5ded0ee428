export * from './connection';
export * from './idempotency';
export * from './schema/index';
export * from './owner';
export * from './status';
