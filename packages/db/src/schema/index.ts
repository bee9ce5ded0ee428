export * from './accounts';
export * from './credentials';
export * from './entries';
export * from './firms';
export * from './organizations';
export * from './oauth';
