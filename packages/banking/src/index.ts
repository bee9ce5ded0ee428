export { createBankAccount, getBankAccount, listBankAccounts } from './accounts';
export {
  excludeBankTransaction,
  includeBankTransaction,
  matchBankTransaction,
  reclassifyBankTransaction,
  reconcileBankTransaction,
  splitBankTransaction,
} from './actions';
export {
  finishReconciliation,
  getReconciliation,
  listReconciliations,
  openReconciliation,
  undoReconciliation,
} from './reconciliations';
export { reconciliationStatus } from './status-report';
export { largeRowsInPeriod, registersReconciledThrough, rowsAwaitingReview } from './close-scans';
export type { RegisterReconciledThrough } from './close-scans';
export {
  BANK_TRANSACTION_STATES,
  BANK_TRANSACTION_STATUS_LIST,
  getBankTransaction,
  insertBankTransaction,
  listBankTransactions,
  SOURCE_TYPES,
} from './transactions';
export type { BankTransaction, BankTransactionLine } from './transactions';
export type { Aggregator } from './feeds/aggregator';
export { BANK_FEEDS_MODES, bankFeedsConfigFrom, SANDBOX_PLAID } from './feeds/config';
export type { BankFeedsConfig } from './feeds/config';
export { connectBankFeed, getBankFeed, listBankFeeds } from './feeds/connections';
export { PlaidAggregator, WEBHOOK_MAX_AGE_S } from './feeds/plaid';
export { DEVELOPMENT_TOKEN_KEYS, parseTokenKeys } from './feeds/secrets';
export type { TokenKeys } from './feeds/secrets';
export { syncFeed } from './feeds/sync';
export { acceptFeedWebhook, pruneFeedWebhookDeliveries, runRequestedSyncs } from './feeds/requests';
export { matchCandidates } from './candidates';
export { recordPayment } from './payments';
