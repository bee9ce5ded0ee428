import { Type } from 'typebox';
import { DataOf, ListQuery, NON_BLANK_TEXT, PageOf, Timestamp, Uuid } from '../../schemas';

export const Role = Type.Enum(['owner', 'admin', 'member'], {
  description:
    'owner and admin: the whole firm, and they manage its users and API keys (only owners make or change owners); ' +
    'member: the books of the companies in organizationIds, nothing of the firm’s management.',
});

const OrganizationIds = Type.Union([Type.Array(Uuid(), { minItems: 1, maxItems: 1000 }), Type.Null()], {
  description:
    'Members only: the companies (organizations) the member may see; null for every company of the firm. Every ' +
    'credential acting for the member (session, keys they made) sees only these; another company is 404.',
});

const Name = Type.String({ minLength: 1, maxLength: 200, pattern: NON_BLANK_TEXT });

export const User = Type.Object(
  {
    id: Uuid(),
    email: Type.String({ description: 'Lower case; unique across the deployment.' }),
    name: Type.String(),
    role: Role,
    status: Type.Enum(['invited', 'active', 'deactivated'], {
      description:
        'invited: has not used their invitation link yet (no password); deactivated: taken off the firm, cannot ' +
        'sign in, and nothing acting for them is accepted.',
    }),
    organizationIds: Type.Union([Type.Array(Uuid()), Type.Null()], {
      description: 'Members: the companies they may see; null: every company of the firm.',
    }),
    createdAt: Timestamp(),
    deactivatedAt: Type.Union([Timestamp(), Type.Null()]),
  },
  { title: 'User' },
);

export const Invitation = Type.Object(
  {
    url: Type.String({
      description:
        'The sign-in link (`/invite/{token}` on this site): whoever opens it chooses the password and is signed in. ' +
        'Shown only now; it works once, until expiresAt. No mail is sent: pass it on to the person invited.',
    }),
    expiresAt: Timestamp(),
  },
  { title: 'Invitation' },
);

export const InvitedUser = Type.Object({ ...User.properties, invitation: Invitation }, { title: 'InvitedUser' });

export const UserParams = Type.Object({ id: Uuid('User id.') });

export const InviteUserBody = Type.Object(
  {
    email: Type.String({ format: 'email', maxLength: 320 }),
    name: Type.Optional(Name),
    role: Role,
    organizationIds: Type.Optional(OrganizationIds),
  },
  { additionalProperties: false },
);

export const UpdateUserBody = Type.Object(
  {
    name: Type.Optional(Name),
    role: Type.Optional(Role),
    organizationIds: Type.Optional(OrganizationIds),
  },
  { additionalProperties: false, minProperties: 1 },
);

export const UserListQuery = Type.Object({ ...ListQuery });

export const UserOne = DataOf(User);
export const UserList = PageOf(User);
export const InvitedUserOne = DataOf(InvitedUser);
