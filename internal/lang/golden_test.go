package lang

import (
	"fmt"
	"sort"
	"strings"
	"testing"
)

// goldenTexts are texts in several scripts, each a few sentences about
// the same bird, and the answer Detect gives for them with the embedded
// model: codes and shares to two decimals. A change of model.bin or of
// the method that changes an answer shows here.
var goldenTexts = []struct{ text, want string }{
	{"The storm petrel flies low over the waves and feeds on small animals it picks from the surface of the sea.", "eng 1.00"},
	{"Die Sturmschwalbe fliegt dicht über den Wellen und ernährt sich von kleinen Tieren, die sie von der Meeresoberfläche aufnimmt.", "deu 1.00"},
	{"Le pétrel tempête vole au ras des vagues et se nourrit de petits animaux qu'il attrape à la surface de la mer.", "fra 1.00"},
	{"El paíño vuela bajo sobre las olas y se alimenta de pequeños animales que recoge de la superficie del mar.", "spa 1.00"},
	{"Il petrello vola basso sopra le onde e si nutre di piccoli animali che raccoglie dalla superficie del mare.", "ita 1.00"},
	{"Буревестник летает низко над волнами и питается мелкими животными, которых собирает с поверхности моря.", "rus 1.00"},
	{"Буревісник літає низько над хвилями і живиться дрібними тваринами, яких збирає з поверхні моря.", "ukr 1.00"},
	{"Το θυελλοπούλι πετά χαμηλά πάνω από τα κύματα και τρέφεται με μικρά ζώα που μαζεύει από την επιφάνεια της θάλασσας.", "ell 1.00"},
	{"يطير طائر النوء منخفضا فوق الأمواج ويتغذى على حيوانات صغيرة يلتقطها من سطح البحر.", "ara 1.00"},
	{"יסעור הסערה עף נמוך מעל הגלים וניזון מבעלי חיים קטנים שהוא אוסף מפני הים.", "heb 1.00"},
	{"तूफानी पितरेल लहरों के ऊपर नीचे उड़ता है और समुद्र की सतह से छोटे जीवों को खाता है।", "hin 1.00"},
	{"海燕贴着海浪低飞，以从海面上捕捉的小动物为食。它们一生大部分时间都在海上度过。", "zho 1.00"},
	{"ウミツバメは波の上を低く飛び、海面から拾い上げた小さな動物を食べて暮らしています。", "jpn 1.00"},
	{"바다제비는 파도 위를 낮게 날며 바다 표면에서 잡은 작은 동물을 먹고 삽니다.", "kor 1.00"},
	{"นกโต้คลื่นบินต่ำเหนือคลื่นและกินสัตว์เล็ก ๆ ที่จับได้จากผิวน้ำทะเล", "tha 1.00"},
}

// TestGolden: Detect gives the recorded answers for goldenTexts.
func TestGolden(t *testing.T) {
	for _, g := range goldenTexts {
		if got := formatShares(Detect(g.text)); got != g.want {
			t.Errorf("Detect(%.30q) = %q, want %q", g.text, got, g.want)
		}
	}
}

// formatShares writes shares as "code share" pairs, shares to two
// decimals.
func formatShares(ss []Share) string {
	var b strings.Builder
	for i, s := range ss {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %.2f", s.Code, s.Share)
	}
	return b.String()
}

// TestDetectEdges: text with no letters, too few, or in a script no
// language of the model is written in gives nil; two languages in
// separate lines give both.
func TestDetectEdges(t *testing.T) {
	for _, text := range []string{
		"", "\n\n\n", "0123456789 42 3.14159 2026-12-07 +1 (555) 010-0199",
		"!!! ??? ... --- *** ###", "Hello", "https://a.io/b?c=1",
		"ᏣᎳᎩ ᎦᏬᏂᎯᏍᏗ ᎠᏍᎦᏯ ᎤᏓᏅᏘ ᎠᏂᏴᏫ ᏣᎳᎩ ᎦᏬᏂᎯᏍᏗ", // Cherokee, no model language's script
	} {
		if got := Detect(text); got != nil {
			t.Errorf("Detect(%q) = %v, want nil", text, got)
		}
	}
	en := goldenTexts[0].text + " It nests in burrows on remote islands.\n"
	ru := goldenTexts[5].text + " Гнездится в норах на отдалённых островах.\n"
	for _, c := range []struct {
		text    string
		want    [2]string
		ordered bool // else the two in either order: their shares are about even
	}{{en + ru, [2]string{"eng", "rus"}, false}, {ru + en, [2]string{"eng", "rus"}, false}, {en + ru + ru, [2]string{"rus", "eng"}, true}, {en + en + ru, [2]string{"eng", "rus"}, true}} {
		got := Detect(c.text)
		if len(got) != 2 {
			t.Errorf("Detect(two languages) = %v, want %v", got, c.want)
			continue
		}
		codes := []string{got[0].Code, got[1].Code}
		if !c.ordered {
			sort.Strings(codes)
		}
		if codes[0] != c.want[0] || codes[1] != c.want[1] {
			t.Errorf("Detect(two languages) = %v, want %v", got, c.want)
		}
		if sum := got[0].Share + got[1].Share; sum < 0.99 || sum > 1.0001 {
			t.Errorf("shares %v sum to %.3f, want 1", got, sum)
		}
	}
}
