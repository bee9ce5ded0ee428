import { ALL_SCOPES } from '@firm/core';
import { Type } from 'typebox';
import { DataOf, ListQuery, NON_BLANK_TEXT, PageOf, Timestamp, Uuid } from '../../schemas';

const ScopeName = Type.Enum(ALL_SCOPES, { description: 'A scope of the catalogue (x-scopes).' });

export const ApiKey = Type.Object(
  {
    id: Uuid(),
    name: Type.String(),
    prefix: Type.String({
      description: 'The first characters of the key (dk_live_ and four more), to tell keys apart.',
    }),
    scopes: Type.Array(ScopeName),
    organizationIds: Type.Union([Type.Array(Uuid()), Type.Null()], {
      description: 'The companies (organizations) the key may act on; null: every company of the firm.',
    }),
    createdBy: Type.Union(
      [Type.Object({ id: Uuid(), email: Type.String(), name: Type.String() }, { title: 'ApiKeyMaker' }), Type.Null()],
      {
        description:
          'The user who made the key: it acts for them, never beyond what they may do now (a member’s companies, ' +
          'no management scopes), and is revoked when they are deactivated. Null for keys made with the CLI.',
      },
    ),
    createdAt: Timestamp(),
    lastUsedAt: Type.Union([Timestamp(), Type.Null()], {
      description: 'When the key was last accepted, to the minute (it is written at most once a minute).',
    }),
    revokedAt: Type.Union([Timestamp(), Type.Null()]),
  },
  { title: 'ApiKey' },
);

export const ApiKeyWithSecret = Type.Object(
  {
    ...ApiKey.properties,
    key: Type.String({
      description: 'The key (dk_live_...), for Authorization: Bearer. Shown only now: only its hash is kept.',
    }),
  },
  { title: 'ApiKeyWithSecret' },
);

export const ApiKeyParams = Type.Object({ id: Uuid('API key id.') });

export const CreateApiKeyBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200, pattern: NON_BLANK_TEXT, description: 'What the key is for.' }),
    scopes: Type.Optional(
      Type.Array(ScopeName, {
        minItems: 1,
        maxItems: ALL_SCOPES.length,
        description: 'Left out: every scope the caller holds. Each must be one the caller holds.',
      }),
    ),
    organizationIds: Type.Optional(
      Type.Array(Uuid(), {
        minItems: 1,
        maxItems: 1000,
        description: 'Limit the key to these companies; left out: every company the caller may see.',
      }),
    ),
    forUserId: Type.Optional(
      Uuid(
        'Issue the key to this active user of the firm instead of the caller: it acts for them (createdBy), so it ' +
          'holds neither a scope nor a company outside what both they and the caller may reach (a member: no ' +
          'management scope, only their companies), and it is revoked when they are deactivated. Only owners issue ' +
          'keys acting for an owner.',
      ),
    ),
  },
  { additionalProperties: false },
);

export const ApiKeyListQuery = Type.Object({
  ...ListQuery,
  includeRevoked: Type.Optional(Type.Boolean({ default: false, description: 'Revoked keys too.' })),
});

export const ApiKeyOne = DataOf(ApiKey);
export const ApiKeyList = PageOf(ApiKey);
export const ApiKeyWithSecretOne = DataOf(ApiKeyWithSecret);
