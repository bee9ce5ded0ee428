export * from './history';
export * from './random';
export * from './seed';
