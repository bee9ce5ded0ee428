export * from './adapter';
export * from './config';
export * from './faults';
export * from './http';
export * from './limiter';
export * from './oauth';
export * from './tokens';
