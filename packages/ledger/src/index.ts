export { accountLedger, inNormalDirection } from './account-ledger';
export {
  accountCodes,
  accountsAtOffset,
  accountsByIds,
  accountSubtypes,
  createAccount,
  deleteAccount,
  getAccount,
  listAccounts,
  presentAccount,
  updateAccount,
  isSuspenseAccountName,
} from './accounts';
export type { Account } from './accounts';
export { rollupRows } from './balances';
export { STANDARD_CHART } from './chart-template';
export {
  activeCompanyIds,
  activeCompanyNames,
  assertCompanyWritable,
  CHART_TEMPLATE_NAMES,
  COMPANY_NAME_MAX,
  companiesOfFirm,
  companyArchived,
  companyById,
  companyOfFirm,
  createCompany,
  firmCompanyIds,
  firmCompanyNames,
  listCompanies,
  presentCompany,
  setCompanyArchived,
  TAX_ID_MAX,
  updateCompany,
} from './companies';
export type { ChartTemplate, Company } from './companies';
export { nowOf } from './context';
export type { LedgerContext } from './context';
export { addDays, checkDateRange, fiscalYearStart, isIsoDate, todayUtc } from './dates';
export { ledgerErrorOf, rethrowLedgerError } from './db-errors';
export {
  createDraftEntry,
  entryLinesOf,
  getEntry,
  journalEntryStatus,
  listEntries,
  listJournalLines,
  postedEntriesAtOffset,
  postedEntryFrom,
  presentEntry,
} from './entries';
export type { EntryRow, EntrySource, LineRow } from './entries';
export { listAuditEvents, recordAuditRow, recordEvent, recordFirmAuditRow } from './events';
export { DEFAULT_GENERAL_LEDGER_MAX_LINES, generalLedger, openGeneralLedger } from './general-ledger';
export type { GeneralLedgerLine, GeneralLedgerReader } from './general-ledger';
export type { DebitCreditLine } from './lines';
export { OPENING_BALANCE_MAX_ROWS, parseOpeningBalancesCsv, postOpeningBalances } from './opening-balances';
export type { OpeningBalancesInput } from './opening-balances';
export { getBookSettings, setBooksClosedThrough, setFiscalYearStartMonth } from './periods';
export { postEntry, postOnce, postTransaction, voidEntry } from './posting';
export type { PostingReceipt } from './posting';
export { type PostingStatementStats, postingStatementStats } from './posting-batches';
export type { DocumentEntryKind, PostingInput } from './posting-inputs';
export { balanceSheet, cashFlowStatement, monthlyTrend, profitAndLoss, trialBalance } from './reports';
export type {
  BalanceSection,
  BalanceSheet,
  CashFlowStatement,
  ProfitAndLoss,
  ProfitAndLossSection,
  ReportAccount,
  TrendMonth,
  TrialBalance,
} from './reports';
export { checkSchedule } from './schedules';
export type { Schedule } from './schedules';
export {
  createScheduledEntry,
  deleteScheduledEntry,
  getScheduledEntry,
  listScheduledEntries,
  pauseScheduledEntry,
  resumeScheduledEntry,
  runDueScheduledEntries,
  startScheduledEntryRunner,
  updateScheduledEntry,
} from './scheduled-entries';
export type { ScheduledEntry } from './scheduled-entries';
export { accountNetsAsOf, booksClosedThrough, draftEntryCounts } from './scans';
export { accountPeriodFigures, draftEntriesDated, scheduledEntriesBehind } from './close-scans';
export type { AccountPeriodFigures, ScheduledEntryBehind } from './close-scans';
export type { AccountNetAsOf } from './scans';
export { POSTING_SOURCE_TYPE, postingRegisterRowsSql } from './register-rows';
export {
  accountBalancesWithCurrency,
  accountNetThrough,
  accountSubtypeOf,
  accountWithCurrency,
  activeAccountRows,
  activeAccountSubtype,
  archivedOrganizationIds,
  companyArchivedAt,
  entryDebitsCentsOf,
  firmOfCompany,
  firmOfOrganization,
  firstActiveAccountOfSubtype,
  subtypeNetAsOf,
} from './lookups';
export type { ActiveAccount } from './lookups';
export {
  chartAccounts,
  companyBooksClosedThrough,
  firstStagedArchivedAccount,
  importedReferenceExists,
  postStagedEntries,
} from './staged';
