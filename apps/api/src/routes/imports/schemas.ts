import { Type } from 'typebox';
import { DataOf, ListQuery, PageOf, Timestamp, Uuid } from '../../schemas';

export { CompanyParams } from '../../schemas';

export const ImportParams = Type.Object({
  companyId: Type.String({ description: 'Company (organization) id.' }),
  importId: Type.String({ description: 'Import id.' }),
});

export const ImportQuery = Type.Object({
  kind: Type.Optional(
    Type.Enum(['journal', 'accounts'], {
      default: 'journal',
      description: 'journal: entries (history); accounts: a chart of accounts (CSV only).',
    }),
  ),
  format: Type.Optional(
    Type.Enum(['csv', 'hledger'], { default: 'csv', description: 'csv, or the hledger / ledger-cli journal format.' }),
  ),
  atomicity: Type.Optional(
    Type.Enum(['file', 'entry'], {
      default: 'file',
      description:
        'file: one bad row refuses the whole file (422 IMPORT_INVALID, nothing written). entry: the good entries ' +
        '(accounts) are imported and the bad ones reported.',
    }),
  ),
});

export const ImportListQuery = Type.Object(ListQuery);

export const RowErrorSchema = Type.Object(
  {
    line: Type.Integer({ description: 'Line of the file, 1 for the first.' }),
    column: Type.Union([Type.String(), Type.Null()], { description: 'The column to blame, when one is.' }),
    message: Type.String(),
  },
  { title: 'ImportRowError' },
);

const Nullable = <T extends ReturnType<typeof Type.String>>(t: T) => Type.Union([t, Type.Null()]);

export const ImportSchema = Type.Object(
  {
    id: Uuid(),
    companyId: Uuid(),
    kind: Type.Enum(['journal', 'accounts']),
    format: Type.Enum(['csv', 'hledger']),
    atomicity: Type.Enum(['file', 'entry']),
    status: Type.Enum(['queued', 'running', 'completed', 'failed'], {
      description:
        'queued: waiting for the background runner; running: being posted (doneRows grows); completed; failed: ' +
        'stopped, errorSummary says why (what was posted before stays posted).',
    }),
    fileSha256: Nullable(Type.String({ description: 'SHA-256 of the file: the same file is imported once.' })),
    fileBytes: Type.Integer(),
    totalRows: Type.Integer({ description: 'Data rows of the file (CSV records, hledger postings).' }),
    totalEntries: Type.Integer(),
    doneRows: Type.Integer({ description: 'Rows posted (journal) or accounts created so far.' }),
    failedRows: Type.Integer({ description: 'Rows refused (atomicity=entry: the rows of the refused entries).' }),
    entriesPosted: Type.Integer(),
    accountsCreated: Type.Integer(),
    errorCount: Type.Integer({ description: 'Every refused row; `errors` lists the first ones.' }),
    errorSummary: Nullable(Type.String()),
    rowsPerSecond: Type.Union([Type.Number(), Type.Null()]),
    createdAt: Timestamp(),
    startedAt: Nullable(Timestamp()),
    finishedAt: Nullable(Timestamp()),
  },
  { title: 'Import' },
);

export const ImportWithErrors = Type.Object(
  {
    ...ImportSchema.properties,
    errors: Type.Array(RowErrorSchema, { description: 'The first 100 refused rows, in line order.' }),
  },
  { title: 'ImportWithErrors' },
);

export const ImportOne = DataOf(ImportWithErrors);
export const ImportList = PageOf(ImportSchema);

export const ImportErrorList = PageOf(RowErrorSchema);
