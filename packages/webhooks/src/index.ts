export * from './address';
export * from './deliveries';
export * from './schedule';
export * from './secrets';
export * from './sender';
export * from './signing';
export * from './subscriptions';
export * from './worker';
