export {
  ACCOUNT_SUBTYPE_LIST,
  ACCOUNT_SUBTYPES,
  ACCOUNT_TYPES,
  accountTypeFromCode,
  DEFAULT_SUBTYPE,
  isBalanceSheetType,
  subtypeBelongsTo,
} from './accounts';
export type { AccountSubtype, AccountType } from './accounts';
export { decodeCursor, encodeCursor, toPage } from './cursor';
export type { Page } from './cursor';
export { DomainError, ERROR_CODES, isDomainError } from './errors';
export type { ErrorCode, ErrorDetail } from './errors';
export {
  ALL_EVENTS,
  EVENT_TYPE_LIST,
  EVENT_TYPES,
  isEventType,
  SUBSCRIBABLE_EVENT_TYPES,
  TEST_EVENT_TYPE,
} from './events';
export type { EventType } from './events';
export { isUuid, newId } from './ids';
export { ALL_SCOPES, isScope, MANAGER_SCOPES, NOT_FOR_OAUTH, OAUTH_SCOPES, SCOPES } from './scopes';
export type { Scope } from './scopes';
export { startRounds } from './rounds';
export { FIRST_DATE, isCalendarDate, isIsoDate, isIsoTimestamp, LAST_DATE } from './dates';
export { hasLoneSurrogate, isStorableText } from './text';
export { openBytes, openText, parseSealingKeys, sealBytes, sealedKeyId, sealText } from './sealing';
export type { SealingKeys } from './sealing';
