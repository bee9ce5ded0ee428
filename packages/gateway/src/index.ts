export * from './audit';
export * from './clients';
export * from './coverage';
export * from './query';
export * from './passthrough';
export * from './skills';
export * from './health';
export * from './limits';
