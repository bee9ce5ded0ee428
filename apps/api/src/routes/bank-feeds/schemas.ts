import { Type } from 'typebox';
import { NON_BLANK_TEXT, Timestamp, Uuid } from '../../schemas';

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(s: T) => Type.Union([s, Type.Null()]);

const FeedAccount = Type.Object({
  bankAccountId: Uuid(),
  name: Type.String(),
  mask: Nullable(Type.String()),
  feedAccountId: Type.String({ description: "The aggregator's id of the account." }),
  unreviewedCount: Type.Integer({ description: 'Rows waiting for review.' }),
  lastTransactionDate: Nullable(Type.String({ format: 'date' })),
});

export const BankFeed = Type.Object(
  {
    id: Uuid(),
    organizationId: Uuid(),
    provider: Type.String({ description: 'The aggregator: plaid.' }),
    institutionName: Type.String(),
    status: Type.Enum(['active', 'error', 'needs_relink', 'disconnected'], {
      description:
        'active: the last sync succeeded. error: the last sync failed (lastError says why). needs_relink: the stored ' +
        'aggregator authorization does not open for this connection; connect the bank again.',
    }),
    lastSyncedAt: Nullable(Timestamp()),
    lastError: Nullable(Type.String()),
    lastErrorAt: Nullable(Timestamp()),
    pendingReviewCount: Type.Integer({ description: 'Rows of its accounts waiting for review.' }),
    accounts: Type.Array(FeedAccount),
    createdAt: Timestamp(),
  },
  { title: 'BankFeed' },
);

export const BankFeedList = Type.Object({
  data: Type.Array(BankFeed),
  nextCursor: Type.Null({ description: 'Always null: every connection of the organization fits one page.' }),
});

export const BankFeedHealth = Type.Object(
  {
    data: Type.Array(
      Type.Object({
        connectionId: Uuid(),
        institutionName: Type.String(),
        status: Type.Enum(['active', 'error', 'needs_relink', 'disconnected']),
        lastSyncedAt: Nullable(Timestamp()),
        lastError: Nullable(Type.String()),
        lastErrorAt: Nullable(Timestamp()),
        pendingReviewCount: Type.Integer(),
        accounts: Type.Array(FeedAccount),
      }),
    ),
  },
  { title: 'BankFeedHealth' },
);

export const ConnectBankFeedBody = Type.Object(
  {
    publicToken: Type.String({
      minLength: 1,
      maxLength: 500,
      description: "The public token the aggregator's link flow returned (single use).",
    }),
    institutionName: Type.String({ minLength: 1, maxLength: 200, pattern: NON_BLANK_TEXT }),
    accounts: Type.Array(
      Type.Object(
        {
          feedAccountId: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
          mask: Type.Optional(Type.String({ pattern: '^[0-9A-Za-z]{2,8}$' })),
          accountId: Uuid('The ledger account (bank or credit_card) whose register this account feeds.'),
        },
        { additionalProperties: false },
      ),
      {
        minItems: 1,
        maxItems: 50,
        description: "Which of the connection's accounts feed which register, by feedAccountId or mask.",
      },
    ),
  },
  { additionalProperties: false, title: 'ConnectBankFeed' },
);

export const BankFeedOne = Type.Object({ data: BankFeed });
