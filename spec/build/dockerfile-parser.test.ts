// The Dockerfile parser, variable substitution, stage planning and .dockerignore rules: pure, with literal texts.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { parseDockerfile } from '../../lib/build/dockerfile-parser.js'
import { expandWord, envMap } from '../../lib/build/shell-lex.js'
import { planBuild, stagesUpTo, flagValue } from '../../lib/build/stages.js'
import { checkStopSignal } from '../../lib/build/config-values.js'
import { parseDockerignore, isIgnored } from '../../lib/build/dockerignore.js'
import { goQuoteList, canonicalJson, parseGoDuration, goDuration } from '../../lib/build/step-config.js'

function nodes (text: string): Array<{ name: string, args: string[], json: boolean, flags: string[], line: number, original: string }> {
  return parseDockerfile(text).nodes.map((n) => ({ name: n.name, args: n.args, json: n.json, flags: n.flags, line: n.startLine, original: n.original }))
}

function parseFails (text: string, message: string | RegExp): void {
  assert.throws(() => planBuild(parseDockerfile(text)), (err: Error) => {
    if (typeof message === 'string') assert.equal(err.message, message)
    else assert.match(err.message, message)
    return true
  })
}

test('comments, blank lines, case-insensitive keywords, line numbers', () => {
  const n = nodes('# a comment\n\nfrom busybox AS base\n  # indented comment\nRun echo hi\n\ncmd ["sh"]\n')
  assert.deepEqual(n.map((x) => [x.name, x.line]), [['from', 3], ['run', 5], ['cmd', 7]])
  assert.deepEqual(n[0]?.args, ['busybox', 'AS', 'base'])
  assert.equal(n[1]?.original, 'Run echo hi')
})

test('line continuations: joined, comments and empty lines inside skipped, the start line kept', () => {
  const df = parseDockerfile('FROM busybox\nRUN echo a \\\n  b \\\n# inside\n\n  c\nCMD x\n')
  assert.equal(df.nodes[1]?.args[0], 'echo a   b   c')
  assert.equal(df.nodes[1]?.startLine, 2)
  assert.equal(df.nodes[2]?.startLine, 7)
  assert.equal(df.warnings.length, 1)
  // trailing blanks after the escape still continue; CRLF files parse the same
  assert.equal(parseDockerfile('FROM a\r\nRUN x \\  \r\n y\r\n').nodes[1]?.args[0], 'x  y')
})

test('escape directive: backtick continues lines and escapes in words; directives only at the top', () => {
  const df = parseDockerfile('# escape=`\nFROM busybox\nRUN dir c:\\ `\n  && echo ok\nCOPY a` b /x/\n')
  assert.equal(df.escapeToken, '`')
  assert.equal(df.nodes[1]?.args[0], 'dir c:\\   && echo ok')
  assert.deepEqual(df.nodes[2]?.args, ['a` b', '/x/'])
  assert.equal(expandWord('a` b', new Map(), '`'), 'a b')
  // after an instruction or a blank line a directive is only a comment
  assert.equal(parseDockerfile('FROM a\n# escape=`\nRUN x \\\n y\n').escapeToken, '\\')
  assert.equal(parseDockerfile('\n# escape=`\nFROM a\n').escapeToken, '\\')
  assert.throws(() => parseDockerfile('# escape=x\nFROM a\n'), /dockerfile parse error on line 1: invalid escape token 'x'/)
  assert.throws(() => parseDockerfile('# escape=`\n# escape=\\\nFROM a\n'), /line 2: only one escape parser directive can be used/)
})

test('syntax directive is recorded (the builder refuses BuildKit frontends)', () => {
  assert.equal(parseDockerfile('# syntax=docker/dockerfile:1\nFROM a\n').syntax, 'docker/dockerfile:1')
  assert.equal(parseDockerfile('#syntax = example.com/frontend:2\nFROM a\n').syntax, 'example.com/frontend:2')
})

test('JSON and shell forms', () => {
  const n = nodes('FROM a\nRUN ["echo", "a b"]\nRUN [not json\nCMD echo $HOME\nENTRYPOINT ["/bin/x"]\nSHELL ["/bin/bash", "-c"]\nCOPY ["a b", "/dst/"]\nCOPY a b /c/\nVOLUME ["/v1", "/v2"]\nVOLUME /v3 /v4\n')
  assert.deepEqual(n.slice(1).map((x) => [x.name, x.json, x.args]), [
    ['run', true, ['echo', 'a b']],
    ['run', false, ['[not json']],
    ['cmd', false, ['echo $HOME']],
    ['entrypoint', true, ['/bin/x']],
    ['shell', true, ['/bin/bash', '-c']],
    ['copy', true, ['a b', '/dst/']],
    ['copy', false, ['a', 'b', '/c/']],
    ['volume', true, ['/v1', '/v2']],
    ['volume', false, ['/v3', '/v4']]
  ])
  // a JSON array with a non-string is shell form
  assert.deepEqual(nodes('FROM a\nCMD [1, 2]\n')[1]?.args, ['[1, 2]'])
})

test('ENV and LABEL: name=value pairs with quotes, and the legacy form', () => {
  assert.deepEqual(nodes('FROM a\nENV A=1 B="two words" C=x\\ y\n')[1]?.args, ['A', '1', 'B', '"two words"', 'C', 'x\\ y'])
  assert.deepEqual(nodes('FROM a\nENV PATH /usr/bin:/bin  with blanks\n')[1]?.args, ['PATH', '/usr/bin:/bin  with blanks'])
  assert.deepEqual(nodes('FROM a\nLABEL "com.example.v"="1.0" other=\'q q\'\n')[1]?.args, ['"com.example.v"', '"1.0"', 'other', "'q q'"])
  parseFails('FROM a\nENV A=1 B\n', /line 2: Syntax error - can't find = in "B"/)
  parseFails('FROM a\nENV\n', 'dockerfile parse error on line 2: ENV requires at least one argument')
})

test('flags, heredocs refused, BuildKit-only options refused, unknown flags', () => {
  const n = parseDockerfile('FROM --platform=linux/amd64 a AS b\nCOPY --from=b --chown=1:2 --chmod=755 x /y\n').nodes
  assert.deepEqual(n[0]?.flags, ['platform=linux/amd64'])
  assert.equal(flagValue(n[1] as never, 'chown'), '1:2')
  assert.equal(flagValue(n[1] as never, 'from'), 'b')
  parseFails('FROM a\nRUN <<EOF\necho\nEOF\n', /line 2: heredocs are not supported/)
  parseFails('FROM a\nCOPY <<EOF /x\nhi\nEOF\n', /line 2: heredocs are not supported/)
  // a shift in arithmetic is no heredoc
  assert.doesNotThrow(() => parseDockerfile('FROM a\nRUN echo $((1<<2))\n'))
  parseFails('FROM a\nRUN --mount=type=cache,target=/x true\n', 'dockerfile parse error on line 2: the --mount option requires BuildKit. Refer to https://docs.docker.com/go/buildkit/ to learn how to build images with BuildKit enabled')
  parseFails('FROM a\nCOPY --link x /y\n', /the --link option requires BuildKit/)
  parseFails('FROM a\nCOPY --bogus=1 x /y\n', 'dockerfile parse error on line 2: Unknown flag: bogus')
})

test('errors carry the line number in dockerd\'s wording', () => {
  parseFails('FROM busybox\n\nFOO bar\n', 'dockerfile parse error on line 3: unknown instruction: FOO')
  parseFails('RUN x\nFROM a\n', 'dockerfile parse error on line 1: no build stage in current context')
  parseFails('FROM a b\n', 'dockerfile parse error on line 1: FROM requires either one or three arguments')
  parseFails('FROM a\nCOPY x\n', 'dockerfile parse error on line 2: COPY requires at least two arguments, but only one was provided. Destination could not be determined')
  parseFails('FROM a\nWORKDIR\n', 'dockerfile parse error on line 2: WORKDIR requires exactly one argument')
  parseFails('FROM a\nSHELL /bin/sh\n', 'dockerfile parse error on line 2: SHELL requires the arguments to be in JSON form')
  parseFails('FROM a\nHEALTHCHECK WHAT x\n', /line 2: Unknown type "WHAT" in HEALTHCHECK/)
  parseFails('FROM a\nONBUILD ONBUILD RUN x\n', /line 2: Chaining ONBUILD via `ONBUILD ONBUILD` isn't allowed/)
  parseFails('FROM a\nONBUILD FROM b\n', /line 2: FROM isn't allowed as an ONBUILD trigger/)
  parseFails('FROM a AS x\nFROM b AS X\n', /line 2: duplicate name x/)
  // (an empty file is refused before parsing, naming the Dockerfile: the CLI test checks it)
  parseFails('', 'failed to parse Dockerfile: file with no instructions')
  parseFails('# only a comment\n', 'failed to parse Dockerfile: file with no instructions')
})

test('stages: ARG before FROM, names, targets, step count', () => {
  const plan = planBuild(parseDockerfile('ARG V=1\nFROM busybox:$V AS build\nRUN x\nFROM scratch\nCOPY --from=build /a /a\nCMD ["/a"]\n'))
  assert.equal(plan.metaArgs.length, 1)
  assert.deepEqual(plan.stages.map((s) => [s.name, s.base, s.commands.length]), [['build', 'busybox:$V', 1], [undefined, 'scratch', 2]])
  assert.equal(plan.totalSteps, 6)
  assert.equal(stagesUpTo(plan, 'BUILD').length, 1)
  assert.throws(() => stagesUpTo(plan, 'nope'), /failed to reach build target nope in Dockerfile/)
})

test('HEALTHCHECK and ONBUILD', () => {
  const n = parseDockerfile('FROM a\nHEALTHCHECK --interval=5s --retries=3 CMD curl -f http://x/ || exit 1\nHEALTHCHECK NONE\nHEALTHCHECK CMD ["true"]\nONBUILD RUN echo trig\n').nodes
  assert.deepEqual(n[1]?.args, ['CMD', 'curl -f http://x/ || exit 1'])
  assert.deepEqual(n[1]?.flags, ['interval=5s', 'retries=3'])
  assert.deepEqual(n[2]?.args, ['NONE'])
  assert.deepEqual([n[3]?.args, n[3]?.json], [['CMD', 'true'], true])
  assert.equal(n[4]?.next?.name, 'run')
  assert.deepEqual(n[4]?.args, ['RUN echo trig'])
})

test('variable substitution: forms, quotes and escapes', () => {
  const env = envMap(['A=apple', 'E=', 'SP=a b'])
  const cases: Array<[string, string]> = [
    ['$A', 'apple'], ['${A}', 'apple'], ['x${A}y', 'xappley'], ['$A.txt', 'apple.txt'],
    ['$NOPE', ''], ['${NOPE:-dflt}', 'dflt'], ['${E:-dflt}', 'dflt'], ['${E-dflt}', ''], ['${NOPE-dflt}', 'dflt'],
    ['${A:+set}', 'set'], ['${E:+set}', ''], ['${E+set}', 'set'], ['${NOPE:+set}', ''],
    ['${NOPE:-${A}}', 'apple'], ["'$A'", '$A'], ['"$A"', 'apple'], ['"a \\"q\\" $A"', 'a "q" apple'],
    ['\\$A', '$A'], ['"\\$A"', '$A'], ['"\\n"', '\\n'], ['a\\ b', 'a b'], ['$', '$'], ['cost: $5', 'cost: '],
    ['${SP}', 'a b'], ['"${A}"\'${A}\'', 'apple${A}']
  ]
  for (const [input, want] of cases) assert.equal(expandWord(input, env), want, input)
  assert.throws(() => expandWord('${A', env), /missing '}'/)
  assert.throws(() => expandWord('${A:=x}', env), /unsupported modifier \(=\) in substitution/)
  assert.throws(() => expandWord('${NOPE:?must be set}', env), /NOPE: must be set/)
  assert.throws(() => expandWord('"open', env), /matching double-quote/)
})

test('.dockerignore: patterns, ** and ! exceptions (the last match wins), parents', () => {
  const p = parseDockerignore('# comment\n*.log\n!keep.log\nnode_modules\n**/*.tmp\n/secret/\ndocs/**\n!docs/README.md\n  \n')
  const cases: Array<[string, boolean]> = [
    ['a.log', true], ['keep.log', false], ['sub/a.log', false], ['node_modules/x/y.js', true], ['node_modules', true],
    ['x.tmp', true], ['a/b/c.tmp', true], ['secret/k', true], ['docs/a.md', true], ['docs/README.md', false], ['src/main.c', false]
  ]
  for (const [path, want] of cases) assert.equal(isIgnored(p, path), want, path)
  assert.equal(isIgnored(parseDockerignore('*\n!src\n'), 'src/a/b.c'), false)
  assert.equal(isIgnored(parseDockerignore('*\n!src\n'), 'other'), true)
  assert.equal(isIgnored(parseDockerignore('a?c\n[x-z].txt\n'), 'abc'), true)
  assert.equal(isIgnored(parseDockerignore('a?c\n[x-z].txt\n'), 'y.txt'), true)
  assert.equal(isIgnored(parseDockerignore('a?c\n'), 'a/c'), false)
})

test('history helpers: Go %q lists, canonical JSON, durations', () => {
  assert.equal(goQuoteList(['sh', '-c', 'echo "hi"']), '["sh" "-c" "echo \\"hi\\""]')
  assert.equal(canonicalJson({ b: 1, a: [{ d: 1, c: 2 }], u: undefined }), '{"a":[{"c":2,"d":1}],"b":1}')
  assert.equal(parseGoDuration('1m30s'), 90e9)
  assert.equal(parseGoDuration('500ms'), 5e8)
  assert.throws(() => parseGoDuration('5 s'), /invalid duration/)
  assert.equal(goDuration(90e9), '1m30s')
  assert.equal(goDuration(5e9), '5s')
  assert.equal(goDuration(0), '0s')
})

test('STOPSIGNAL values as dockerd parses them', () => {
  for (const ok of ['SIGTERM', 'term', 'SIGKILL', '9', 'RTMIN', 'SIGRTMIN+3', 'RTMAX-14', 'CLD', 'sigwinch']) checkStopSignal(ok)
  for (const bad of ['BOGUS', '0', 'RTMIN+16', 'RTMAX+1', 'SIG', '']) assert.throws(() => { checkStopSignal(bad) }, /Invalid signal/, bad)
})
