package termtext

import (
	"slices"
	"strings"
)

// CutToWidth is s cut to at most width terminal columns, the cut ending in
// "…": a line rewritten in place must not wrap, or it could not be rewritten.
func CutToWidth(s string, width int) string {
	total := 0
	for _, r := range s {
		total += RuneColumns(r)
	}
	if total <= width {
		return s
	}
	var b strings.Builder
	used := 0
	for _, r := range s {
		if used+RuneColumns(r) > width-1 {
			break
		}
		b.WriteRune(r)
		used += RuneColumns(r)
	}
	return b.String() + "…"
}

// wideRanges are the code points terminals show two columns wide: East
// Asian wide and fullwidth characters and emoji, rounded to whole blocks
// where that errs on the wide side.
var wideRanges = [][2]rune{
	{0x1100, 0x115F},   // Hangul Jamo initials
	{0x231A, 0x231B},   // watch, hourglass
	{0x2329, 0x232A},   // angle brackets
	{0x23E9, 0x23F3},   // media symbols
	{0x25FD, 0x25FE},   // small squares
	{0x2614, 0x2615},   // umbrella, hot beverage
	{0x2648, 0x2653},   // zodiac
	{0x267F, 0x267F},   // wheelchair
	{0x2693, 0x2693},   // anchor
	{0x26A1, 0x26A1},   // high voltage
	{0x26AA, 0x26AB},   // circles
	{0x26BD, 0x26BE},   // balls
	{0x26C4, 0x26C5},   // snowman, sun
	{0x26CE, 0x26CE},   // ophiuchus
	{0x26D4, 0x26D4},   // no entry
	{0x26EA, 0x26EA},   // church
	{0x26F2, 0x26F5},   // fountain ... sailboat
	{0x26FA, 0x26FA},   // tent
	{0x26FD, 0x26FD},   // fuel pump
	{0x2705, 0x2705},   // check mark
	{0x270A, 0x270B},   // fists
	{0x2728, 0x2728},   // sparkles
	{0x274C, 0x274E},   // cross marks
	{0x2753, 0x2757},   // question and exclamation marks
	{0x2795, 0x2797},   // heavy plus, minus, division
	{0x27B0, 0x27B0},   // curly loop
	{0x27BF, 0x27BF},   // double curly loop
	{0x2B1B, 0x2B1C},   // large squares
	{0x2B50, 0x2B50},   // star
	{0x2B55, 0x2B55},   // circle
	{0x2E80, 0x303E},   // CJK radicals, Kangxi, ideographic description, CJK symbols
	{0x3041, 0x33FF},   // Hiragana, Katakana, Bopomofo, Hangul compatibility, Kanbun, CJK strokes, enclosed CJK
	{0x3400, 0x4DBF},   // CJK extension A
	{0x4E00, 0x9FFF},   // CJK unified ideographs
	{0xA000, 0xA4CF},   // Yi
	{0xA960, 0xA97F},   // Hangul Jamo extended A
	{0xAC00, 0xD7A3},   // Hangul syllables
	{0xF900, 0xFAFF},   // CJK compatibility ideographs
	{0xFE10, 0xFE19},   // vertical forms
	{0xFE30, 0xFE6F},   // CJK compatibility forms, small forms
	{0xFF00, 0xFF60},   // fullwidth forms
	{0xFFE0, 0xFFE6},   // fullwidth signs
	{0x16FE0, 0x18CFF}, // Tangut, Khitan
	{0x1AFF0, 0x1B2FF}, // Kana supplement and extensions, Nushu
	{0x1F000, 0x1F02F}, // Mahjong tiles
	{0x1F0CF, 0x1F0CF}, // joker
	{0x1F18E, 0x1F18E}, // AB button
	{0x1F191, 0x1F19A}, // squared words
	{0x1F200, 0x1F2FF}, // enclosed ideographic supplement
	{0x1F300, 0x1F64F}, // pictographs, emoticons
	{0x1F680, 0x1F6FF}, // transport and map symbols
	{0x1F7E0, 0x1F7EB}, // coloured circles and squares
	{0x1F90C, 0x1F9FF}, // supplemental symbols and pictographs
	{0x1FA70, 0x1FAFF}, // symbols and pictographs extended A
	{0x20000, 0x3FFFD}, // CJK extensions B and beyond
}

// RuneColumns is how many columns a terminal gives r: 2 for the wide ones
// (East Asian wide and fullwidth characters, emoji), 1 for every other
// (which errs wide for those a terminal shows in none).
func RuneColumns(r rune) int {
	_, found := slices.BinarySearchFunc(wideRanges, r, func(rg [2]rune, r rune) int {
		switch {
		case rg[1] < r:
			return -1
		case rg[0] > r:
			return 1
		}
		return 0
	})
	if found {
		return 2
	}
	return 1
}
