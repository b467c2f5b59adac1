package store

import "unsafe"

// Match reports whether str matches the glob pattern with the exact rules
// of Redis's stringmatchlen: * ? [abc] [^a] [a-z] and \ escapes; nocase
// folds ASCII letters.
//
// Redis's quirks are kept on purpose, since KEYS, SCAN MATCH, PSUBSCRIBE
// and CONFIG GET must select the same names:
//   - a pattern never matches the empty string unless it is empty itself
//     (so "*" does not match "": KEYS and SCAN special-case a lone "*");
//   - a '[' class that is not closed extends to the end of the pattern;
//   - in a class, "x-y" is a range even when y is the closing ']' ("[a-]");
//   - range bounds and the tested byte compare as C's signed char, so bytes
//     0x80..0xff sort below ASCII in ranges.
//
// Redis matches recursively, giving up at once when an inner '*' has tried
// every position; that is the same as backtracking only to the last '*'
// seen, which is what this loop does, in linear space.
func Match(pattern, str []byte, nocase bool) bool {
	p, s := 0, 0
	np, ns := len(pattern), len(str)
	starP, starS := -1, 0 // the pattern after the last '*', and where it is tried
	for {
		if p < np && s < ns {
			ok := true
			switch pattern[p] {
			case '*':
				for p+1 < np && pattern[p+1] == '*' {
					p++
				}
				if p == np-1 {
					return true
				}
				starP, starS = p+1, s
				p = starP
				continue
			case '?':
				s++
			case '[':
				p++
				not := p < np && pattern[p] == '^'
				if not {
					p++
				}
				matched := false
				for {
					if p < np && pattern[p] == '\\' && np-p >= 2 {
						p++
						if pattern[p] == str[s] {
							matched = true
						}
					} else if p < np && pattern[p] == ']' {
						break
					} else if p == np {
						// Unterminated class: step back onto its last byte.
						p--
						break
					} else if np-p >= 3 && pattern[p+1] == '-' {
						start, end := int8(pattern[p]), int8(pattern[p+2])
						c := int8(str[s])
						if start > end {
							start, end = end, start
						}
						if nocase {
							start, end, c = lowerSigned(start), lowerSigned(end), lowerSigned(c)
						}
						p += 2
						if c >= start && c <= end {
							matched = true
						}
					} else if eqByte(pattern[p], str[s], nocase) {
						matched = true
					}
					p++
				}
				if not {
					matched = !matched
				}
				ok = matched
				s++
			case '\\':
				if np-p >= 2 {
					p++
				}
				ok = eqByte(pattern[p], str[s], nocase)
				s++
			default:
				ok = eqByte(pattern[p], str[s], nocase)
				s++
			}
			if ok {
				p++
				if s < ns {
					continue
				}
				for p < np && pattern[p] == '*' {
					p++
				}
				if p == np {
					return true
				}
			}
		} else if p == np && s == ns {
			return true
		}
		// No match from here: let the last '*' swallow one more byte. It
		// never takes the whole rest of the string (the pattern after it
		// needs at least one byte).
		if starP < 0 {
			return false
		}
		starS++
		if starS >= ns {
			return false
		}
		p, s = starP, starS
	}
}

// MatchString is Match for a string subject, without copying it.
func MatchString(pattern []byte, str string, nocase bool) bool {
	return Match(pattern, unsafe.Slice(unsafe.StringData(str), len(str)), nocase)
}

func lower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 32
	}
	return c
}

func lowerSigned(c int8) int8 {
	if c >= 'A' && c <= 'Z' {
		return c + 32
	}
	return c
}

func eqByte(a, b byte, nocase bool) bool {
	if nocase {
		return lower(a) == lower(b)
	}
	return a == b
}
