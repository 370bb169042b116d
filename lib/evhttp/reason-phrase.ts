// evhttp_response_phrase_internal(): the default reason phrase for a status code. The table is libevent 2.1's
// own, mirrored as is: its 3xx list lacks 306, so 306 reads "Temporary Redirect" and 307 falls back to the
// class name "Redirection". Clients ignore reason phrases, so the quirk is kept for byte fidelity.

const INFORMATIONAL = ['Continue', 'Switching Protocols']
const SUCCESS = ['OK', 'Created', 'Accepted', 'Non-Authoritative Information', 'No Content', 'Reset Content',
  'Partial Content']
const REDIRECTION = ['Multiple Choices', 'Moved Permanently', 'Found', 'See Other', 'Not Modified', 'Use Proxy',
  'Temporary Redirect']
const CLIENT_ERROR = ['Bad Request', 'Unauthorized', 'Payment Required', 'Forbidden', 'Not Found',
  'Method Not Allowed', 'Not Acceptable', 'Proxy Authentication Required', 'Request Time-out', 'Conflict', 'Gone',
  'Length Required', 'Precondition Failed', 'Request Entity Too Large', 'Request-URI Too Large',
  'Unsupported Media Type', 'Requested range not satisfiable', 'Expectation Failed']
const SERVER_ERROR = ['Internal Server Error', 'Not Implemented', 'Bad Gateway', 'Service Unavailable',
  'Gateway Time-out', 'HTTP Version not supported']

const CLASSES: ReadonlyArray<{ name: string, phrases: readonly string[] }> = [
  { name: 'Informational', phrases: INFORMATIONAL },
  { name: 'Success', phrases: SUCCESS },
  { name: 'Redirection', phrases: REDIRECTION },
  { name: 'Client Error', phrases: CLIENT_ERROR },
  { name: 'Server Error', phrases: SERVER_ERROR },
]

export function reasonPhrase (code: number): string {
  // C integer division truncates toward zero; so does Math.trunc.
  const klass = Math.trunc(code / 100) - 1
  const sub = code % 100
  if (klass < 0 || klass >= CLASSES.length) return 'Unknown Status Class'
  const c = CLASSES[klass]!
  if (sub < 0 || sub >= c.phrases.length) return c.name
  return c.phrases[sub]!
}
