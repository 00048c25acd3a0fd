package sam

// TranslatorJSON is the translator's data as the transform reads it, for the tests that
// compare it with the installed translator.
var TranslatorJSON = translatorJSON
