// Command _plot draws bench/vif's Figure 8 table (t and one column of
// Mbit/s per VIF, as run.sh writes figure8.txt) as a PNG line plot, like
// the seed's Figure 8: go run ./bench/vif/_plot IN.txt OUT.png
package main

import (
	"bufio"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"strconv"
	"strings"
)

const (
	w, h   = 900, 420
	left   = 50
	bottom = 30
	top    = 20
	right  = 110
)

var colors = []color.RGBA{{200, 30, 30, 255}, {30, 110, 220, 255}, {120, 120, 120, 255}, {20, 160, 60, 255}, {200, 140, 0, 255}}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: _plot IN.txt OUT.png")
		os.Exit(2)
	}
	f, err := os.Open(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var names []string
	var rows [][]float64
	s := bufio.NewScanner(f)
	for s.Scan() {
		fl := strings.Fields(s.Text())
		if len(fl) < 2 {
			continue
		}
		if fl[0] == "t" {
			names = fl[1:]
			continue
		}
		var row []float64
		for _, x := range fl {
			v, err := strconv.ParseFloat(x, 64)
			if err != nil {
				row = nil
				break
			}
			row = append(row, v)
		}
		if row != nil {
			rows = append(rows, row)
		}
	}
	maxY, maxT := 45.0, 60.0
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			img.Set(x, y, color.White)
		}
	}
	px := func(t, v float64) (int, int) {
		return left + int(t/maxT*float64(w-left-right)), h - bottom - int(v/maxY*float64(h-bottom-top))
	}
	grey := color.RGBA{210, 210, 210, 255}
	for v := 0.0; v <= maxY; v += 5 { // grid every 5 Mbit/s
		_, y := px(0, v)
		for x := left; x < w-right; x++ {
			img.Set(x, y, grey)
		}
		digits(img, left-30, y-3, strconv.Itoa(int(v)), color.Black)
	}
	for t := 0.0; t <= maxT; t += 10 {
		x, _ := px(t, 0)
		for y := top; y < h-bottom; y++ {
			img.Set(x, y, grey)
		}
		digits(img, x-4, h-bottom+8, strconv.Itoa(int(t)), color.Black)
	}
	for c := 1; c < len(names)+1; c++ {
		col := colors[(c-1)%len(colors)]
		for i := 1; i < len(rows); i++ {
			x0, y0 := px(rows[i-1][0], rows[i-1][c])
			x1, y1 := px(rows[i][0], rows[i][c])
			line(img, x0, y0, x1, y1, col)
		}
		// legend: a swatch and the VIF's number
		ly := top + 20*c
		for x := w - right + 15; x < w-right+45; x++ {
			img.Set(x, ly, col)
			img.Set(x, ly+1, col)
		}
		digits(img, w-right+55, ly-3, strings.TrimPrefix(names[c-1], "vif"), col)
	}
	out, err := os.Create(os.Args[2])
	if err == nil {
		err = png.Encode(out, img)
		out.Close()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func line(img *image.RGBA, x0, y0, x1, y1 int, c color.Color) {
	dx, dy := abs(x1-x0), -abs(y1-y0)
	sx, sy := sign(x1-x0), sign(y1-y0)
	e := dx + dy
	for {
		img.Set(x0, y0, c)
		img.Set(x0, y0+1, c)
		if x0 == x1 && y0 == y1 {
			return
		}
		e2 := 2 * e
		if e2 >= dy {
			e += dy
			x0 += sx
		}
		if e2 <= dx {
			e += dx
			y0 += sy
		}
	}
}

func abs(a int) int {
	if a < 0 {
		return -a
	}
	return a
}

func sign(a int) int {
	switch {
	case a < 0:
		return -1
	case a > 0:
		return 1
	}
	return 0
}

// digits draws s (digits only) in a 3x5 pixel font, scaled by 2.
func digits(img *image.RGBA, x, y int, s string, c color.Color) {
	font := map[rune][5]string{
		'0': {"111", "101", "101", "101", "111"}, '1': {"010", "110", "010", "010", "111"},
		'2': {"111", "001", "111", "100", "111"}, '3': {"111", "001", "111", "001", "111"},
		'4': {"101", "101", "111", "001", "001"}, '5': {"111", "100", "111", "001", "111"},
		'6': {"111", "100", "111", "101", "111"}, '7': {"111", "001", "001", "001", "001"},
		'8': {"111", "101", "111", "101", "111"}, '9': {"111", "101", "111", "001", "111"},
	}
	for _, r := range s {
		g, ok := font[r]
		if !ok {
			continue
		}
		for row, bits := range g {
			for col, b := range bits {
				if b == '1' {
					for dy := 0; dy < 2; dy++ {
						for dx := 0; dx < 2; dx++ {
							img.Set(x+2*col+dx, y+2*row+dy, c)
						}
					}
				}
			}
		}
		x += 8
	}
}
