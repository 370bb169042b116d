// go-units HumanDuration as dockerd uses it in container Status strings ("Exited (0) 2 minutes ago").
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { humanDuration } from '../../lib/util/time.js'

test('humanDuration rounds seconds and minutes down and hours to the nearest, as go-units does', () => {
  const s = 1000
  const m = 60 * s
  const h = 60 * m
  const cases: Array<[number, string]> = [
    [0, 'Less than a second'], [999, 'Less than a second'], [1500, '1 second'], [59_999, '59 seconds'],
    [60 * s, 'About a minute'], [119 * s, 'About a minute'], [152 * s, '2 minutes'], [179 * s, '2 minutes'],
    [59 * m + 59 * s, '59 minutes'], [60 * m, 'About an hour'], [89 * m, 'About an hour'], [90 * m, '2 hours'],
    [47 * h + 29 * m, '47 hours'], [47 * h + 30 * m, '2 days'], [13 * 24 * h, '13 days'], [14 * 24 * h, '2 weeks'],
    [60 * 24 * h, '2 months'], [730 * 24 * h, '2 years']
  ]
  for (const [ms, text] of cases) assert.equal(humanDuration(ms), text, `${ms} ms`)
})
