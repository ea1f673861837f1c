"""Fixed word lists of the synthetic corpus: domain terms, word classes, templates, names.

Changing any list changes the corpus generated for a given seed.
"""

from __future__ import annotations


def _words(text: str) -> tuple[str, ...]:
    """Whitespace-separated words (keeps the long word lists below readable)."""
    return tuple(text.split())


# English domain words per field: they give pretrained (semantic) encoders a field-level
# signal that pseudo-words alone would not.
FIELD_TERMS: dict[str, tuple[str, ...]] = {
    "Art": _words(
        "painting artist aesthetic sculpture museum exhibition visual artwork gallery "
        "portrait style iconography design craft canvas performance"
    ),
    "Biology": _words(
        "cells protein gene expression species tissue receptor genome enzyme membrane "
        "mutant pathway organism sequencing evolution transcription"
    ),
    "Business": _words(
        "firms management market customers strategy innovation organizational supply "
        "brand corporate entrepreneurs employees marketing governance consumers retail"
    ),
    "Chemistry": _words(
        "synthesis molecules catalyst reaction compounds solvent spectroscopy ligand "
        "oxidation polymer crystal bonds adsorption aqueous electrochemical complexes"
    ),
    "Computer Science": _words(
        "algorithm network learning software data computing neural graph optimization "
        "retrieval classification security distributed language queries architecture"
    ),
    "Economics": _words(
        "prices growth income labor policy monetary trade welfare inflation households "
        "markets wages fiscal investment equilibrium demand"
    ),
    "Engineering": _words(
        "design control structural power sensor vibration circuit fatigue signal turbine "
        "load manufacturing thermal actuator voltage fluid"
    ),
    "Environmental Science": _words(
        "pollution water soil emissions climate wastewater contaminants ecosystem "
        "sediment groundwater atmospheric biomass runoff toxicity land remediation"
    ),
    "Geography": _words(
        "urban spatial regional landscape population mapping rural migration settlements "
        "cities territorial tourism mobility geographic regions borders"
    ),
    "Geology": _words(
        "rocks sediments tectonic basin crust mineral seismic volcanic magma "
        "stratigraphy isotopic mantle deposits erosion faults metamorphic"
    ),
    "History": _words(
        "century war empire colonial archives medieval historical revolution dynasty "
        "kingdom memory nineteenth chronicle monarchy peasants manuscripts"
    ),
    "Materials Science": _words(
        "alloy microstructure nanoparticles films composite ceramic grain coating "
        "hardness mechanical porous doping annealing fabrication interface sintering"
    ),
    "Mathematics": _words(
        "theorem equations bounded operator spaces algebra manifold proof functions "
        "convergence inequality finite invariant polynomial topology solutions"
    ),
    "Medicine": _words(
        "patients clinical treatment therapy disease diagnosis surgery cohort mortality "
        "symptoms chronic dose infection cancer hospital risk"
    ),
    "Philosophy": _words(
        "ethics moral knowledge argument truth metaphysics reason consciousness belief "
        "epistemic ontology virtue normative logic justice mind"
    ),
    "Physics": _words(
        "quantum energy magnetic field particles spin optical laser plasma scattering "
        "phase electron lattice wave gravitational temperature"
    ),
    "Political Science": _words(
        "democracy elections parties government voters state legislative conflict "
        "institutions political citizens regime campaign sovereignty power policy"
    ),
    "Psychology": _words(
        "participants cognitive behavior memory emotional attention anxiety depression "
        "perception children personality stress mental motivation self wellbeing"
    ),
    "Sociology": _words(
        "social community gender inequality class identity family youth culture "
        "networks education ethnic norms religion status welfare"
    ),
}

# Word classes used by the templates: `{G}` generic noun, `{A}` adjective, verbs in the
# forms a slot needs, `{D}` a number. Content slots (`{K}`, `{S}`, `{T}`, `{F}`, `{X}`)
# draw from the paper's subtopic / topic / field vocabularies.
WORD_CLASSES: dict[str, tuple[str, ...]] = {
    "G": _words(
        "method approach analysis model study framework system effect performance "
        "structure process mechanism behavior technique strategy assessment evaluation "
        "distribution variation response relationship development application comparison "
        "review simulation"
    ),
    "Gp": _words(
        "results factors patterns measurements estimates samples parameters experiments "
        "outcomes changes properties characteristics data methods models effects "
        "mechanisms studies"
    ),
    "A": _words(
        "novel significant robust systematic empirical experimental comparative "
        "quantitative new different efficient accurate improved general multiple "
        "specific large small high low complex simple integrated dynamic potential "
        "critical effective early long-term local global standard"
    ),
    "V": _words("show suggest indicate demonstrate reveal confirm highlight support"),
    "Vs": _words(
        "affects improves modulates reduces increases enhances regulates determines "
        "influences predicts explains alters"
    ),
    "Vb": _words(
        "affect improve modulate reduce increase enhance regulate determine influence "
        "predict explain alter"
    ),
    "Vp": _words(
        "measured analyzed evaluated estimated characterized assessed investigated "
        "examined quantified compared validated tested"
    ),
    "Vi": _words("investigate examine study analyze explore describe characterize evaluate"),
    "Vd": _words("identified observed found detected measured obtained derived established"),
    "D": _words("2 3 4 5 6 8 10 12 15 20 24 30 36 48 50 60 75 100 120 150 200 250 300 500 1000"),
}

# Titles: 6-14 words once hyphenated pairs are joined. Punctuation is a separate token that
# is glued to its neighbour after joining.
TITLE_TEMPLATES: tuple[str, ...] = (
    "{A} {K} of {K} {K} in {F} {G}",
    "{K} {K} and {K} {K} : a {A} {G} of {F} {K}",
    "on the {K} of {K} {K} for {K} {G}",
    "{K} {K} {G} for {A} {K} {K} {Gp}",
    "the role of {K} {K} in {K} {K} {G}",
    "a {A} {G} to {K} {K} using {K} {K}",
    "{K} {K} {G} in {F} {K} : evidence from {K} {K} {Gp}",
    "{A} {G} of {K} {K} and {K} in {X} {K}",
    "towards {A} {K} {G} with {K} {K} {K} {Gp}",
    "{K} {K} of {K} {K} {K} under {A} {K} conditions",
    "effects of {K} {K} on {K} {K} {G} in {F} {K} {K}",
    "{K} {K} as a {G} for {K} {K} {G} and {K} {K}",
    "investigating {K} {K} {Gp} in {X} {K} {K} : a {A} {G}",
    "{A} {K} {K} {G} via {K} {K} {K} of {F} {K} {Gp}",
)

SENTENCE_TEMPLATES: tuple[str, ...] = (
    "In this {G} , we {Vi} the {K} of {K} {K} in {F} {K} .",
    "We propose a {A} {G} for {K} {K} based on {K} {K} {Gp} .",
    "The {K} {K} {G} was {Vp} using {A} {K} {K} {Gp} .",
    "Our results {V} that {K} {K} {Vs} {K} {K} in {A} {K} {Gp} .",
    "These {Gp} {V} a {A} {G} between {K} {K} and {K} {K} {Gp} .",
    "Recent {Gp} of {K} {K} have {Vp} the {K} {K} of {F} {K} .",
    "However , the {K} {G} of {K} {K} in {X} {K} remains unclear .",
    "Here we {Vi} {K} {K} in {D} {K} {K} {Gp} .",
    "A total of {D} {K} {Gp} were {Vp} and {Vp} with {K} {K} .",
    "The {K} {K} was {Vp} by {K} {K} {G} , as in {K} {K} .",
    "Compared with {A} {K} {Gp} , the {K} {K} {G} {Vs} the {K} {K} by {D} % .",
    "We further {Vi} the {G} of {K} and {K} on {K} {K} {Gp} .",
    "This {G} {Vs} the {K} {K} {G} and {Vs} {A} {K} {K} .",
    "Moreover , {A} {K} {K} was {Vp} in {D} {K} {Gp} .",
    "Finally , we {V} the {G} of {K} {K} for {F} {K} {Gp} .",
    "These findings {V} that {K} {K} may {Vb} {K} {K} in {X} {K} .",
    "The {A} {G} of {K} {K} {Gp} is {Vp} in terms of {K} {K} and {K} {G} .",
    "Experimental {Gp} on {K} {K} {Gp} {V} the {A} {G} of the {A} {K} .",
    "Using {A} {K} {Gp} , we {Vd} {K} {K} in {D} {K} {K} .",
    "Both {K} and {K} {K} were {Vd} to {Vb} the {K} of {F} {K} .",
)

# Short abstracts as S2ORC has them (all under the 30-character prefilter threshold).
SHORT_ABSTRACTS: tuple[str, ...] = (
    "",
    "Abstract",
    "No abstract available.",
    "[Abstract not available]",
    "N/A",
    "Summary not available.",
)

FIRST_NAMES: tuple[str, ...] = _words(
    "James Mary John Patricia Robert Jennifer Michael Linda David Elizabeth William "
    "Barbara Richard Susan Joseph Jessica Thomas Sarah Charles Karen Wei Li Jing Hui "
    "Yan Xin Hiroshi Yuki Takashi Akiko Ana Maria Jose Carlos Luis Sofia Pedro Lucia "
    "Hans Anna Peter Eva Klaus Ingrid Pierre Claire Jean Sophie Luca Giulia Marco "
    "Elena Ivan Olga Sergei Natalia Ahmed Fatima Omar Leila Raj Priya Arjun Anjali "
    "Kwame Amara Seo-yeon Min-jun Ji-woo Lars Astrid Mateo Valentina Noah Emma Zoran "
    "Mirela Goran Ivana"
)
LAST_NAMES: tuple[str, ...] = _words(
    "Smith Johnson Williams Brown Jones Garcia Miller Davis Rodriguez Martinez Wang "
    "Li Zhang Liu Chen Yang Huang Zhao Wu Zhou Sato Suzuki Takahashi Tanaka Watanabe "
    "Kim Lee Park Choi Jung Muller Schmidt Schneider Fischer Weber Meyer Wagner "
    "Becker Martin Bernard Dubois Thomas Robert Richard Petit Durand Rossi Russo "
    "Ferrari Esposito Bianchi Romano Colombo Ivanov Smirnov Kuznetsov Popov Novak "
    "Horvat Kovacevic Babic Maric Juric Medic Snajder Silva Santos Oliveira Souza "
    "Pereira Costa Kumar Singh Sharma Patel Gupta Das Khan Ali Hassan Hussein Cohen "
    "Levi Nguyen Tran Pham Hansen Johansen Larsen Nielsen Andersen Jensen Murphy "
    "Kelly O'Brien Walsh Taylor Wilson Anderson Moore Jackson White Harris Clark "
    "Lewis Robinson Walker Young Allen King Wright Scott Hill Green Adams Baker"
)

# Pseudo-word building blocks: onset + vowel (+ coda) syllables and a Latinate suffix.
ONSETS = _words("b c d f g h k l m n p r s t v z br cr dr gr pr tr st sp ch th ph pl cl fl sc qu")
VOWELS = _words("a e i o u a e i o ae io ia ou y")
CODAS = ["", "", "", "", "n", "r", "s", "l", "m", "x", "t"]
SUFFIXES = _words(
    "ase in ine ide ium osis ology ic al ar on ene ate ite ol yl oid ism ation ity ant "
    "ent ome ax an is us or"
)
