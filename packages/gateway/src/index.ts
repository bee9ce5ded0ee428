export * from './audit';
export * from './clients';
export * from './coverage';
