package splicefs

import (
	"fmt"
	"strings"
	"time"

	"wirefs/internal/splice"
)

// Command is one line written to splice/N/ctl.
type Command struct {
	Verb string // from, merge, relay, rate, pause, resume, stop, keep
	Srcs []string
	Dsts []string
	// Rate in bytes per second (HasRate), the schedule (N > 0).
	Rate    float64
	HasRate bool
	N       int
	D       time.Duration
}

// ParseCtl parses one ctl line:
//
//	from SRC to DST [DST...] [rate R] [schedule N,d]
//	merge SRC... to DST [rate R] [schedule N,d]
//	relay A B [rate R] [schedule N,d]
//	rate R | schedule N,d | pause | resume | stop | keep
//
// Names are single words (no spaces); R is in tc's units (10mbit).
func ParseCtl(line string) (Command, error) {
	f := strings.Fields(line)
	if len(f) == 0 {
		return Command{}, fmt.Errorf("empty line")
	}
	c := Command{Verb: f[0]}
	args := f[1:]
	switch c.Verb {
	case "pause", "resume", "stop", "keep":
		if len(args) != 0 {
			return Command{}, fmt.Errorf("%s takes nothing", c.Verb)
		}
		return c, nil
	case "rate", "schedule":
		if len(args) != 1 {
			return Command{}, fmt.Errorf("%s takes one value", c.Verb)
		}
		if err := c.pacing(args); err != nil {
			return Command{}, err
		}
		return c, nil
	case "from", "merge":
		to := -1
		for i, a := range args {
			if a == "to" {
				to = i
				break
			}
		}
		if to < 1 {
			return Command{}, fmt.Errorf("%s wants SRC... to DST", c.Verb)
		}
		c.Srcs = args[:to]
		rest := args[to+1:]
		names, pace := splitPacing(rest)
		c.Dsts = names
		if len(c.Dsts) == 0 {
			return Command{}, fmt.Errorf("%s: no DST after to", c.Verb)
		}
		if c.Verb == "from" && len(c.Srcs) != 1 {
			return Command{}, fmt.Errorf("from takes one SRC (merge takes several)")
		}
		if c.Verb == "merge" && len(c.Dsts) != 1 {
			return Command{}, fmt.Errorf("merge takes one DST")
		}
		return c, c.pacing(pace)
	case "relay":
		names, pace := splitPacing(args)
		if len(names) != 2 {
			return Command{}, fmt.Errorf("relay wants A B")
		}
		c.Srcs, c.Dsts = names[:1], names[1:]
		return c, c.pacing(pace)
	}
	return Command{}, fmt.Errorf("unknown command %q", c.Verb)
}

// splitPacing cuts the trailing "rate R" and "schedule N,d" words off.
func splitPacing(args []string) (names, pace []string) {
	for i := 0; i < len(args); i++ {
		if args[i] == "rate" || args[i] == "schedule" {
			return args[:i], args[i:]
		}
	}
	return args, nil
}

// pacing reads "rate R" and "schedule N,d" pairs (or, for the verbs rate
// and schedule, the one value).
func (c *Command) pacing(words []string) error {
	if c.Verb == "rate" || c.Verb == "schedule" {
		words = []string{c.Verb, words[0]}
	}
	for len(words) > 0 {
		if len(words) < 2 {
			return fmt.Errorf("%s wants a value", words[0])
		}
		switch words[0] {
		case "rate":
			if c.HasRate {
				return fmt.Errorf("rate given twice")
			}
			r, err := splice.ParseRate(words[1])
			if err != nil {
				return err
			}
			c.Rate, c.HasRate = r, true
		case "schedule":
			if c.N > 0 {
				return fmt.Errorf("schedule given twice")
			}
			n, d, err := splice.ParseSchedule(words[1])
			if err != nil {
				return err
			}
			c.N, c.D = n, d
		default:
			return fmt.Errorf("unexpected %q", words[0])
		}
		words = words[2:]
	}
	return nil
}

// String is the line that parses back to c.
func (c Command) String() string {
	var w []string
	switch c.Verb {
	case "from", "merge":
		w = append(append(append([]string{c.Verb}, c.Srcs...), "to"), c.Dsts...)
	case "relay":
		w = append(append([]string{"relay"}, c.Srcs...), c.Dsts...)
	case "rate", "schedule":
		w = nil
	default:
		return c.Verb
	}
	if c.HasRate {
		w = append(w, "rate", splice.FormatRate(c.Rate))
	}
	if c.N > 0 {
		w = append(w, "schedule", fmt.Sprintf("%d,%s", c.N, c.D))
	}
	return strings.Join(w, " ")
}
