export * from './api-keys';
export * from './credentials';
export * from './organizations';
export * from './passwords';
export * from './secrets';
