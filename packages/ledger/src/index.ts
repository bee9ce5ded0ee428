export * from './account-ledger';
export * from './accounts';
export * from './chart-template';
