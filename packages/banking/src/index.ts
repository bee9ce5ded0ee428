export * from './accounts';
export * from './actions';
export * from './reconciliations';
export * from './status-report';
export * from './transactions';
