package store

// Match reports whether str matches the glob pattern with Redis's rules
// (stringmatchlen): * ? [abc] [^a] [a-z] and \ escapes. nocase folds ASCII.
func Match(pattern, str []byte, nocase bool) bool {
	return match(pattern, str, nocase, 0)
}

func lower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 32
	}
	return c
}

func match(p, s []byte, nocase bool, depth int) bool {
	if depth > 1000 {
		return false
	}
	for len(p) > 0 && len(s) > 0 || (len(p) > 0 && p[0] == '*') {
		switch p[0] {
		case '*':
			for len(p) > 1 && p[1] == '*' {
				p = p[1:]
			}
			if len(p) == 1 {
				return true
			}
			for i := 0; i <= len(s); i++ {
				if match(p[1:], s[i:], nocase, depth+1) {
					return true
				}
			}
			return false
		case '?':
			s = s[1:]
		case '[':
			p = p[1:]
			not := len(p) > 0 && p[0] == '^'
			if not {
				p = p[1:]
			}
			matched := false
			for {
				if len(p) == 0 {
					// Unterminated class: Redis steps back one char.
					break
				}
				if p[0] == '\\' && len(p) >= 2 {
					p = p[1:]
					if p[0] == s[0] {
						matched = true
					}
				} else if p[0] == ']' {
					break
				} else if len(p) >= 3 && p[1] == '-' {
					start, end := p[0], p[2]
					c := s[0]
					if start > end {
						start, end = end, start
					}
					if nocase {
						start, end, c = lower(start), lower(end), lower(c)
					}
					p = p[2:]
					if c >= start && c <= end {
						matched = true
					}
				} else {
					if nocase {
						if lower(p[0]) == lower(s[0]) {
							matched = true
						}
					} else if p[0] == s[0] {
						matched = true
					}
				}
				p = p[1:]
			}
			if len(p) == 0 {
				// pattern ended inside the class: treat like Redis (match ends).
				if not {
					matched = !matched
				}
				if !matched {
					return false
				}
				s = s[1:]
				return len(s) == 0
			}
			if not {
				matched = !matched
			}
			if !matched {
				return false
			}
			s = s[1:]
		case '\\':
			if len(p) >= 2 {
				p = p[1:]
			}
			fallthrough
		default:
			if nocase {
				if lower(p[0]) != lower(s[0]) {
					return false
				}
			} else if p[0] != s[0] {
				return false
			}
			s = s[1:]
		}
		p = p[1:]
		if len(s) == 0 {
			for len(p) > 0 && p[0] == '*' {
				p = p[1:]
			}
			break
		}
	}
	return len(p) == 0 && len(s) == 0
}
