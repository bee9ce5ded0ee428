import { Type } from 'typebox';
import { errorResponses } from '../../errors/responses';
import { HtmlPage, Redirect } from '../../html';

export const ReturnTo = Type.String({
  maxLength: 2000,
  description: 'A path on this site to go back to after signing in (the authorization request, usually).',
});

export const LoginQuery = Type.Object({ return_to: Type.Optional(ReturnTo) });

export const LoginForm = Type.Object({
  email: Type.String({ maxLength: 320 }),
  password: Type.String({ maxLength: 1024 }),
  csrf_token: Type.Optional(Type.String({ maxLength: 200, description: 'The token of the sign-in form.' })),
  return_to: Type.Optional(ReturnTo),
});

export const LogoutForm = Type.Object({
  csrf_token: Type.Optional(Type.String({ maxLength: 200, description: 'The session CSRF token of the form.' })),
});

const pageErrors = {
  400: HtmlPage('The form is incomplete or malformed.'),
  500: HtmlPage('Unexpected error.'),
};

export const LoginPageResponses = {
  200: HtmlPage('The sign-in form, or who is signed in.'),
  302: Redirect('Already signed in: back to return_to.'),
  ...pageErrors,
  ...errorResponses(429),
};

export const LoginResponses = {
  303: Redirect('Signed in: to return_to, or to /login.'),
  401: HtmlPage('Wrong email or password: the form again.'),
  403: HtmlPage("The CSRF token is missing or wrong, or the Origin or Host is not this service's (ALLOWED_ORIGINS)."),
  ...pageErrors,
  ...errorResponses(429),
};

export const LogoutResponses = {
  303: Redirect('Signed out: to /login.'),
  403: HtmlPage("The CSRF token is missing or wrong, or the Origin or Host is not this service's (ALLOWED_ORIGINS)."),
  ...pageErrors,
  ...errorResponses(429),
};

export const SessionInfo = Type.Object({
  user: Type.Object({
    id: Type.String(),
    firmId: Type.String(),
    email: Type.String(),
    name: Type.String(),
    role: Type.Union([Type.Literal('owner'), Type.Literal('admin'), Type.Literal('member')]),
  }),
  csrfToken: Type.String({ description: 'Send as x-csrf-token on partner-API changes made with this session.' }),
  expiresAt: Type.String({ format: 'date-time' }),
});

export const InvitationParams = Type.Object({
  token: Type.String({ maxLength: 100, description: 'The token of the invitation link (inv_...).' }),
});

export const InvitationForm = Type.Object({
  password: Type.String({ maxLength: 1024 }),
  password_confirmation: Type.String({ maxLength: 1024 }),
  csrf_token: Type.Optional(Type.String({ maxLength: 200, description: 'The token of the invitation form.' })),
  email: Type.Optional(
    Type.String({ maxLength: 320, description: 'Sent by the form for password managers; ignored.' }),
  ),
});

const invitationErrors = {
  404: HtmlPage('No invitation has this token.'),
  410: HtmlPage('The invitation was used, expired or withdrawn.'),
};

export const InvitationPageResponses = {
  200: HtmlPage('The form to choose a password.'),
  ...invitationErrors,
  ...pageErrors,
  ...errorResponses(429),
};

export const InvitationResponses = {
  303: Redirect('Password set and signed in: to /login, which shows who is signed in.'),
  400: HtmlPage('The passwords differ or are too short: the form again.'),
  403: HtmlPage("The CSRF token is missing or wrong, or the Origin or Host is not this service's (ALLOWED_ORIGINS)."),
  ...invitationErrors,
  500: HtmlPage('Unexpected error.'),
  ...errorResponses(429),
};
