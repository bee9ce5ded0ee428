export * from './accounts';
export * from './cursor';
export * from './errors';
export * from './events';
export * from './ids';
export * from './scopes';
export * from './dates';
export * from './text';
