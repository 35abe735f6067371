import { describe, expect, it } from "vitest";
import { fromMs, US } from "../src/core/time.js";

describe("pollTimeout and handleTimeout agree on every instant", () => {
  it("an instant read back from its milliseconds is the same microsecond", () => {
    // pollTimeout() returns us / 1000; handleTimeout(that) must reach it.
    const missed: number[] = [];
    for (let us = 1; us < 3_000_000; us += 7) {
      if (fromMs(us / US) !== us) missed.push(us);
    }
    expect(missed).toEqual([]);
  });
});
