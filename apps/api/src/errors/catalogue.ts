import type { ErrorCode } from '@firm/core';

interface CodeInfo {
  status: number;
  retryable: boolean;
  description: string;
}

/** The one table of error codes: HTTP status, whether a retry can succeed, and what it means. */
export const ERROR_TABLE: Record<ErrorCode, CodeInfo> = {
  VALIDATION_ERROR: { status: 400, retryable: false, description: 'The request failed validation; see details.' },
  MALFORMED_JSON: { status: 400, retryable: false, description: 'The body is not valid JSON.' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, retryable: false, description: 'Bodies must be application/json.' },
  PAYLOAD_TOO_LARGE: { status: 413, retryable: false, description: 'The body is larger than the limit.' },
  UNAUTHENTICATED: { status: 401, retryable: false, description: 'No valid credential was presented.' },
  INSUFFICIENT_SCOPE: { status: 403, retryable: false, description: 'The credential lacks the scope the route needs.' },
  FORBIDDEN: { status: 403, retryable: false, description: 'The caller may not do this.' },
  NOT_FOUND: { status: 404, retryable: false, description: 'No such resource for this caller.' },
  ROUTE_NOT_FOUND: { status: 404, retryable: false, description: 'No such route.' },
  METHOD_NOT_ALLOWED: {
    status: 405,
    retryable: false,
    description: 'The route exists but not for this method; the Allow header lists the methods it takes.',
  },
  ORGANIZATION_REQUIRED: { status: 400, retryable: false, description: 'The x-organization-id header is required.' },
  ORGANIZATION_NOT_FOUND: { status: 404, retryable: false, description: 'No such organization for this caller.' },
  COMPANY_NAME_TAKEN: {
    status: 409,
    retryable: false,
    description: 'Another company of the firm has this name (archived companies keep theirs).',
  },
  COMPANY_ARCHIVED: {
    status: 409,
    retryable: false,
    description:
      'The company is archived: its books and reports can be read, nothing can be written to them. Unarchive it ' +
      '(POST /api/v1/companies/{companyId}/unarchive) first.',
  },
  CURRENCY_LOCKED: {
    status: 409,
    retryable: false,
    description: 'The currency of a company that has posted entries cannot change.',
  },
  ACCOUNT_NOT_FOUND: { status: 404, retryable: false, description: 'No such account in this organization.' },
  ACCOUNT_CODE_TAKEN: {
    status: 409,
    retryable: false,
    description: 'Another account of the organization has this code.',
  },
  ACCOUNT_IN_USE: { status: 409, retryable: false, description: 'The account has journal lines; archive it instead.' },
  ACCOUNT_TYPE_LOCKED: {
    status: 409,
    retryable: false,
    description: 'The type of an account with journal lines cannot change.',
  },
  INVALID_ACCOUNT: {
    status: 422,
    retryable: false,
    description: 'A referenced account is not an active account of this organization.',
  },
  ENTRY_NOT_FOUND: { status: 404, retryable: false, description: 'No such journal entry in this organization.' },
  UNBALANCED_ENTRY: {
    status: 422,
    retryable: false,
    description: 'Debits and credits differ; details give the difference.',
  },
  INVALID_STATE: { status: 409, retryable: false, description: 'The resource is not in a state that allows this.' },
  INVALID_TRANSFER: {
    status: 422,
    retryable: false,
    description: 'A transfer needs two different balance-sheet accounts.',
  },
  PERIOD_CLOSED: { status: 422, retryable: false, description: 'The date is on or before the books-closed date.' },
  CLOSE_NOT_FOUND: { status: 404, retryable: false, description: 'No such close of this company.' },
  CLOSE_ITEM_NOT_FOUND: {
    status: 404,
    retryable: false,
    description: "No item of this key on the close's checklist as computed now (it may have been resolved).",
  },
  CLOSE_ALREADY_OPEN: {
    status: 409,
    retryable: false,
    description: 'A close of this company and period is already open; details name it (closeId).',
  },
  CLOSE_BLOCKED: {
    status: 409,
    retryable: false,
    description: 'Blocking checklist items are open (details list them): resolve them in the books or sign them off.',
  },
  AMOUNT_OUT_OF_RANGE: {
    status: 422,
    retryable: false,
    description: 'A total or balance would be larger than the ledger keeps (amounts are exact up to 2^53-1 cents).',
  },
  OPENING_BALANCES_INVALID: {
    status: 422,
    retryable: false,
    description: 'Opening balances refused, nothing written; each detail names the row, column and reason.',
  },
  OPENING_BALANCES_EXIST: {
    status: 409,
    retryable: false,
    description: 'The company already has opening balances; send replace: true to replace them.',
  },
  IDEMPOTENCY_KEY_REQUIRED: {
    status: 400,
    retryable: false,
    description: 'Posting routes need an Idempotency-Key header.',
  },
  IDEMPOTENCY_KEY_REUSED: {
    status: 422,
    retryable: false,
    description: 'The key was used for another request: another body, method or path (another record or action).',
  },
  IDEMPOTENCY_IN_PROGRESS: { status: 409, retryable: true, description: 'A request with this key is still running.' },
  WEBHOOK_NOT_FOUND: { status: 404, retryable: false, description: 'No such webhook subscription for this caller.' },
  WEBHOOK_DELIVERY_NOT_FOUND: {
    status: 404,
    retryable: false,
    description: 'No such delivery of this webhook subscription.',
  },
  WEBHOOK_URL_REFUSED: {
    status: 422,
    retryable: false,
    description:
      'The webhook URL is not allowed: it must be https, carry no credentials, and resolve only to public addresses.',
  },
  CONFLICT: { status: 409, retryable: true, description: 'A concurrent change conflicted; retry.' },
  CONTACT_NOT_FOUND: {
    status: 404,
    retryable: false,
    description: 'No such contact in this organization.',
  },
  CONTACT_NAME_TAKEN: {
    status: 409,
    retryable: false,
    description: 'Another contact of the organization has this name (names compare case-insensitively).',
  },
  INVALID_CONTACT: {
    status: 422,
    retryable: false,
    description: 'The referenced contact is not an active contact of this organization.',
  },
  WRONG_CONTACT_KIND: {
    status: 422,
    retryable: false,
    description:
      'The contact is of the wrong kind for this document: sales documents need a customer, purchase documents a vendor.',
  },
  ITEM_NOT_FOUND: {
    status: 404,
    retryable: false,
    description: 'No such item in this organization.',
  },
  ITEM_NAME_TAKEN: {
    status: 409,
    retryable: false,
    description: 'Another item of the organization has this name (names compare case-insensitively).',
  },
  INVALID_ITEM: {
    status: 422,
    retryable: false,
    description:
      'A referenced item is not an active item of this organization, or has no account for this kind of document.',
  },
  TAX_RATE_NOT_FOUND: {
    status: 404,
    retryable: false,
    description: 'No such tax rate in this organization.',
  },
  TAX_RATE_NAME_TAKEN: {
    status: 409,
    retryable: false,
    description: 'Another tax rate of the organization has this name (names compare case-insensitively).',
  },
  INVALID_TAX_RATE: {
    status: 422,
    retryable: false,
    description: 'A referenced tax rate is not an active tax rate of this organization.',
  },
  DOCUMENT_NOT_FOUND: {
    status: 404,
    retryable: false,
    description: 'No such document of this type in this organization.',
  },
  DOCUMENT_NUMBER_TAKEN: {
    status: 409,
    retryable: false,
    description: 'Another document of this type in the organization has this number.',
  },
  LINE_TARGET_REQUIRED: {
    status: 422,
    retryable: false,
    description: 'A document line needs an itemId or an accountId.',
  },
  ZERO_TOTAL: {
    status: 422,
    retryable: false,
    description: 'A posting document must total more than zero cents.',
  },
  CONTROL_ACCOUNT_MISSING: {
    status: 422,
    retryable: false,
    description:
      'The organization has no active accounts-receivable (or accounts-payable) account to post the document to.',
  },
  DOCUMENT_NOT_EDITABLE: {
    status: 422,
    retryable: false,
    description:
      'The document can no longer be changed: it is void or converted, or a payment or credit is applied to it.',
  },
  DOCUMENT_HAS_PAYMENTS: {
    status: 422,
    retryable: false,
    description: 'Payments or credits are applied to the document; void them first.',
  },
  INVALID_ALLOCATION: {
    status: 422,
    retryable: false,
    description:
      'An allocation names a document that cannot take it: unknown, of another contact, of the wrong type, or void.',
  },
  DUPLICATE_ALLOCATION: {
    status: 422,
    retryable: false,
    description: 'One payment allocates to the same document twice.',
  },
  OVER_ALLOCATION: {
    status: 422,
    retryable: false,
    description: 'An allocation is larger than the open balance of its document.',
  },
  ALLOCATION_EXCEEDS_PAYMENT: {
    status: 422,
    retryable: false,
    description: 'The allocations of a payment add up to more than its amount.',
  },
  BANK_ACCOUNT_NOT_FOUND: {
    status: 404,
    retryable: false,
    description: 'No such bank account in this organization.',
  },
  BANK_ACCOUNT_TAKEN: {
    status: 409,
    retryable: false,
    description: 'The ledger account already holds a bank account; each ledger account has at most one register.',
  },
  BANK_TRANSACTION_NOT_FOUND: {
    status: 404,
    retryable: false,
    description: 'No such bank transaction in this organization.',
  },
  ALREADY_RECONCILED: {
    status: 409,
    retryable: false,
    description: 'The bank transaction is reconciled; it cannot change until its reconciliation is undone.',
  },
  SPLIT_MISMATCH: {
    status: 422,
    retryable: false,
    description: 'The parts of a split do not add up to the bank amount; details give both totals.',
  },
  AMOUNT_MISMATCH: {
    status: 422,
    retryable: false,
    description:
      'The matched documents do not add up to the bank amount; name a differenceAccountId to post the difference.',
  },
  RECONCILIATION_NOT_FOUND: {
    status: 404,
    retryable: false,
    description: 'No such reconciliation in this organization.',
  },
  RECONCILIATION_OPEN: {
    status: 409,
    retryable: false,
    description: 'The bank account already has an open reconciliation; finish it first.',
  },
  NO_OPEN_RECONCILIATION: {
    status: 409,
    retryable: false,
    description:
      'No open reconciliation of the transaction’s bank account (or the one named is finished, or of another bank account).',
  },
  RECONCILIATION_UNBALANCED: {
    status: 422,
    retryable: false,
    description:
      'The cleared balance differs from the statement ending balance; reconcile more transactions or ask for an adjustment.',
  },
  BANK_FEED_NOT_FOUND: {
    status: 404,
    retryable: false,
    description: 'No such bank feed connection in this organization.',
  },
  BANK_FEED_NEEDS_RELINK: {
    status: 409,
    retryable: false,
    description:
      "The feed's stored aggregator authorization does not open for this connection (sealed for another one, altered, " +
      'or under a key no longer configured): connect the bank again. The feed shows status needs_relink until then.',
  },
  AGGREGATOR_ERROR: {
    status: 502,
    retryable: true,
    description: 'The bank-data aggregator refused or failed the request; details say what it answered.',
  },
  PUBLIC_TOKEN_REFUSED: {
    status: 422,
    retryable: false,
    description:
      "The aggregator does not know the link flow's public token, or it was already exchanged (tokens are single " +
      'use): run the link flow again for a new one.',
  },
  CLIENT_NOT_FOUND: {
    status: 404,
    retryable: false,
    description: 'No such client for this caller: unknown, of another firm, or closed to agents (agentAccess none).',
  },
  CLIENT_READ_ONLY: {
    status: 403,
    retryable: false,
    description: "The client's agentAccess is read: agents may read its books but not write them.",
  },
  ENTITY_NOT_COVERED: {
    status: 404,
    retryable: false,
    description: 'The gateway does not cover this entity; GET /acct/coverage lists the ones it does.',
  },
  OPERATION_NOT_SUPPORTED: {
    status: 422,
    retryable: false,
    description: 'The entity does not support this operation; GET /acct/coverage lists the operations of each.',
  },
  RECORD_NOT_FOUND: { status: 404, retryable: false, description: 'No such record of this entity in the company.' },
  STALE_SYNC_TOKEN: {
    status: 409,
    retryable: false,
    description:
      "The SyncToken sent is not the record's current one: it changed since it was read. details[0].current is the " +
      'record as it is now; apply the change to it and send its SyncToken.',
  },
  QUERY_INVALID: {
    status: 400,
    retryable: false,
    description:
      'The query is malformed, over a bound (10,000 characters, 50 conditions, 1,000 values in an IN list, ' +
      'STARTPOSITION and MAXRESULTS whole numbers in range), names an entity or field the gateway does not cover, or ' +
      'compares a field with a literal it cannot take (a date that is not on the calendar); details[0] gives the ' +
      'offset, line and column of the problem.',
  },
  QUERY_TIMEOUT: {
    status: 422,
    retryable: false,
    description:
      "The read ran longer than the gateway's statement timeout and was cancelled; nothing changed. The same read " +
      'is likely to run as long again: narrow it (fewer or more selective conditions, a smaller page, a shorter period).',
  },
  CLIENT_NEEDS_REAUTH: {
    status: 409,
    retryable: false,
    description:
      "The client's accounting platform refused its credentials (a revoked or expired authorization): a firm owner " +
      'or admin must connect it again. The client shows status needs_reauth until then.',
  },
  QBO_COMPANY_TAKEN: {
    status: 409,
    retryable: false,
    description:
      'The QuickBooks Online company is held by another connection (another organization, of this firm or another), ' +
      'so it was not connected here and the new authorization was revoked at Intuit.',
  },
  PLATFORM_ERROR: {
    status: 502,
    retryable: true,
    description:
      "The client's accounting platform answered with an error of its own; details carry its code and detail.",
  },
  REPORT_TOO_LARGE: {
    status: 422,
    retryable: false,
    description:
      'The general ledger asked for has more lines than one report or export may hold (GENERAL_LEDGER_MAX_LINES, ' +
      '50,000 by default): ask for a shorter date range or one account (accountId). details[0] gives lineCount and ' +
      'maxLines.',
  },
  USER_NOT_FOUND: { status: 404, retryable: false, description: 'No such user of this firm.' },
  EMAIL_TAKEN: {
    status: 409,
    retryable: false,
    description: 'A user with this email exists (emails are unique across the deployment, deactivated users included).',
  },
  LAST_OWNER: {
    status: 409,
    retryable: false,
    description: 'The change would leave the firm without an active owner: make another user owner first.',
  },
  INVALID_ORGANIZATION: {
    status: 422,
    retryable: false,
    description: 'A referenced company (organization) is not one of the firm that the caller can see.',
  },
  API_KEY_NOT_FOUND: { status: 404, retryable: false, description: 'No such API key of this firm.' },
  SCOPE_NOT_GRANTABLE: {
    status: 403,
    retryable: false,
    description: 'A key can only be given scopes its maker holds; details name the scopes the caller lacks.',
  },
  IMPORT_INVALID: {
    status: 422,
    retryable: false,
    description:
      'Rows of the imported file are wrong; details list them (line, column, message), the first 1,000 of them, and ' +
      'the message gives their number. With atomicity=file nothing of the file was written.',
  },
  IMPORT_NOT_FOUND: { status: 404, retryable: false, description: 'No such import in this company.' },
  ATTACHMENT_NOT_FOUND: { status: 404, retryable: false, description: 'No such attachment in this company.' },
  UNSUPPORTED_FILE_TYPE: {
    status: 415,
    retryable: false,
    description:
      'The file is of a type attachments may not be, as its bytes say (never its name or declared type); the message ' +
      'and details name the detected type. Allowed: PDF, PNG, JPEG, HEIC, TIFF, CSV, XLSX.',
  },
  DOWNLOAD_LINK_INVALID: {
    status: 403,
    retryable: false,
    description:
      'The download link is not one this service signed for that attachment of that company (altered, cut short or ' +
      'for another file); ask for a new one.',
  },
  DOWNLOAD_LINK_EXPIRED: {
    status: 410,
    retryable: false,
    description: 'The download link was signed by this service but its time is over (15 minutes); ask for a new one.',
  },
  RATE_LIMITED: { status: 429, retryable: true, description: 'Too many requests; wait for Retry-After.' },
  SERVICE_UNAVAILABLE: { status: 503, retryable: true, description: 'A dependency is unavailable; retry later.' },
  INTERNAL_ERROR: { status: 500, retryable: true, description: 'Unexpected error; retry later.' },
};
